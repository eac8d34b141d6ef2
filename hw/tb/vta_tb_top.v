`default_nettype none
// Co-verification testbench top: the accelerator and the testbench DRAM on its memory port.
// The cocotb testbench drives clk, rst and the run control, and reads the debug outputs of
// u_dut when a run hangs.
module vta_tb_top (
    clk,
    rst,
    start,
    insn_base,
    insn_count,
    event_sel,
    dump,
    running,
    done,
    cycles,
    quiescent
);
/* verilator lint_off UNUSEDPARAM */  // the headers declare every constant; a module uses some
`include "vta_params.vh"
`include "vta_derived.vh"
/* verilator lint_on UNUSEDPARAM */

    parameter integer DRAM_LOG_WORDS = 16;  // DRAM size: 2^DRAM_LOG_WORDS bus words

    input wire clk;
    input wire rst;
    input wire start;
    input wire [DADDR_W-1:0] insn_base;
    input wire [CNT_W-1:0] insn_count;
    input wire [EV_SEL_W-1:0] event_sel;  // which event counter u_dut.dbg_event shows
    input wire dump;  // write the DRAM image to +DRAM_OUT
    output wire running;
    output wire done;
    output wire [CNT_W-1:0] cycles;
    output wire quiescent;  // every instruction under way has ended

    wire mem_req_valid;
    wire mem_req_write;
    wire [DADDR_W-1:0] mem_req_addr;
    wire [ROWB_W-1:0] mem_req_row_bytes;
    wire [ROWS_W-1:0] mem_req_rows;
    wire [STRB_W-1:0] mem_req_stride;
    wire mem_beat;
    wire mem_last;
    wire [BUS_BITS-1:0] mem_rdata;
    wire [BUS_BITS-1:0] mem_wdata;

    /* verilator lint_off PINCONNECTEMPTY */  // debug outputs are read hierarchically
    vta_top u_dut (
        .clk(clk),
        .rst(rst),
        .start(start),
        .insn_base(insn_base),
        .insn_count(insn_count),
        .running(running),
        .done(done),
        .cycles(cycles),
        .quiescent(quiescent),
        .mem_req_valid(mem_req_valid),
        .mem_req_write(mem_req_write),
        .mem_req_addr(mem_req_addr),
        .mem_req_row_bytes(mem_req_row_bytes),
        .mem_req_rows(mem_req_rows),
        .mem_req_stride(mem_req_stride),
        .mem_beat(mem_beat),
        .mem_last(mem_last),
        .mem_rdata(mem_rdata),
        .mem_wdata(mem_wdata),
        .dbg_dispatched(),
        .dbg_issued(),
        .dbg_states(),
        .dbg_waiting(),
        .dbg_tokens(),
        .dbg_cmd_counts(),
        .dbg_stats(),
        .dbg_event_sel(event_sel),
        .dbg_event()
    );
    /* verilator lint_on PINCONNECTEMPTY */

    vta_dram_model #(
        .LOG_WORDS(DRAM_LOG_WORDS)
    ) u_dram (
        .clk(clk),
        .rst(rst),
        .req_valid(mem_req_valid),
        .req_write(mem_req_write),
        .req_addr(mem_req_addr),
        .req_row_bytes(mem_req_row_bytes),
        .req_rows(mem_req_rows),
        .req_stride(mem_req_stride),
        .beat(mem_beat),
        .last(mem_last),
        .rdata(mem_rdata),
        .wdata(mem_wdata),
        .dump(dump)
    );

endmodule
`default_nettype wire
