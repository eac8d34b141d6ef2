"""The accelerator target: instruction-stream building, DRAM layout and the static checker."""
