// Constants derived from the generated hardware header. Include it right after
// `vta_params.vh`, inside a module body. Every value below is an expression of generated
// constants, or a width the ISA itself fixes (ISA.md section 2); no hardware knob lives here.

localparam integer INSN_BITS = 128;  // instruction width, fixed by the ISA
localparam integer INSN_BYTES = INSN_BITS / 8;
localparam integer CNT_W = 32;  // width of instruction and cycle counters
localparam integer EV_W = 64;  // width of event counters (vta_stats): a whole network fits
// Event counters of vta_stats: GEMM, reset GEMM, ALU per opcode value and operand kind,
// reads and writes of the five buffers, DRAM bytes of seven kinds; and their selector's width.
localparam integer N_EVENTS = 2 + 2 * (1 << ALU_ALU_OPCODE_W) + 5 + 5 + 7;
localparam integer EV_SEL_W = $clog2(N_EVENTS);
// Buffer entries one port moves in a cycle: at most BUS_BYTES (a beat of the narrowest entry).
localparam integer ENT_W = $clog2(BUS_BYTES + 1) + 1;

// Widest DRAM element of any memory type (acc >= out; acc8 elements are out-sized).
localparam integer MAX_EB_IW = (INP_ELEM_BYTES > WGT_ELEM_BYTES) ? INP_ELEM_BYTES : WGT_ELEM_BYTES;
localparam integer MAX_EB_AU = (ACC_ELEM_BYTES > UOP_ELEM_BYTES) ? ACC_ELEM_BYTES : UOP_ELEM_BYTES;
localparam integer MAX_ELEM_BYTES = (MAX_EB_IW > MAX_EB_AU) ? MAX_EB_IW : MAX_EB_AU;
localparam integer LOG_MAX_EB = $clog2(MAX_ELEM_BYTES);

// log2 of the element bytes of each memory type (element sizes are powers of two).
localparam integer LOG_UOP_EB = $clog2(UOP_ELEM_BYTES);
localparam integer LOG_INP_EB = $clog2(INP_ELEM_BYTES);
localparam integer LOG_WGT_EB = $clog2(WGT_ELEM_BYTES);
localparam integer LOG_ACC_EB = $clog2(ACC_ELEM_BYTES);
localparam integer LOG_OUT_EB = $clog2(OUT_ELEM_BYTES);
localparam integer LOG_BUS_BYTES = $clog2(BUS_BYTES);

// Memory-port descriptor widths: byte address, bytes per row, rows, bytes between rows.
localparam integer DADDR_W = MEM_DRAM_BASE_W + LOG_MAX_EB;
localparam integer ROWB_W = MEM_X_SIZE_W + LOG_MAX_EB;
localparam integer ROWS_W = MEM_Y_SIZE_W;
localparam integer STRB_W = MEM_X_STRIDE_W + LOG_MAX_EB;
localparam integer SADDR_W = MEM_SRAM_BASE_W;  // SRAM entry address as instructions carry it

// Entries each buffer takes per bus beat: its banks (a beat of narrow entries is written,
// or read by store, in one cycle). The acc buffer is sized for ACC8 loads (out-sized elements).
localparam integer K_UOP = (BUS_BYTES > UOP_ELEM_BYTES) ? BUS_BYTES / UOP_ELEM_BYTES : 1;
localparam integer K_INP = (BUS_BYTES > INP_ELEM_BYTES) ? BUS_BYTES / INP_ELEM_BYTES : 1;
localparam integer K_WGT = (BUS_BYTES > WGT_ELEM_BYTES) ? BUS_BYTES / WGT_ELEM_BYTES : 1;
localparam integer K_OUT = (BUS_BYTES > OUT_ELEM_BYTES) ? BUS_BYTES / OUT_ELEM_BYTES : 1;
localparam integer K_ACC = K_OUT;

// Micro-op source index width (inp index for GEMM, acc index for ALU).
localparam integer SRC_W = UOP_SRC_W;

// Queue occupancy counter widths.
localparam integer CMDQ_CW = $clog2(CMD_QUEUE_DEPTH + 1);
localparam integer DEPQ_CW = $clog2(DEP_QUEUE_DEPTH + 1);

// Fetch: beats of a full burst and the burst buffer (a whole number of beats).
localparam integer FETCH_BEATS = (FETCH_BURST * INSN_BYTES + BUS_BYTES - 1) / BUS_BYTES;
localparam integer FETCH_BUF_BITS = FETCH_BEATS * BUS_BITS;

// Statistics categories of a cycle (docs/timing.md section 6), as vta_sim numbers them.
localparam [1:0] CAT_BUSY = 2'd0;  // issue, execution, padding, transfers; fetch: dispatch
localparam [1:0] CAT_WAIT_TOKEN = 2'd1;  // head waits for a token, push back-pressure;
                                         // fetch: dispatch blocked by a full command queue
localparam [1:0] CAT_WAIT_MEMORY = 2'd2;  // asked for the DRAM port, not granted
localparam [1:0] CAT_IDLE = 2'd3;  // nothing to do

// States of the issue controller (vta_issue_ctrl), reported on the debug outputs.
localparam [1:0] ST_FREE = 2'd0;  // free to issue the head of the command queue
localparam [1:0] ST_EXEC = 2'd1;  // executing an instruction (E > 0)
localparam [1:0] ST_HOLD = 2'd2;  // execution done, waiting for room to push its tokens
