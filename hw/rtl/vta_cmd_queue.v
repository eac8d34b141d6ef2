`default_nettype none
// A command queue: a FIFO of CMD_QUEUE_DEPTH instructions between fetch and one module.
// The head is read combinationally. Counts are registered (docs/timing.md section 1): an
// instruction pushed in cycle t is at the head from t + 1 at the earliest, and a pop in cycle t
// does not make room for a push in the same cycle.
module vta_cmd_queue (
    clk,
    rst,
    // producer (fetch)
    push,
    push_data,
    not_full,
    // consumer (load, compute or store)
    pop,
    head,
    not_empty,
    // observation
    count
);
/* verilator lint_off UNUSEDPARAM */  // the headers declare every constant; a module uses some
`include "vta_params.vh"
`include "vta_derived.vh"
/* verilator lint_on UNUSEDPARAM */

    // CMD_QUEUE_DEPTH is a power of two of at least 2 (the config checks the power of two).
    localparam integer AW = $clog2(CMD_QUEUE_DEPTH);
    localparam [CMDQ_CW-1:0] FULL = CMD_QUEUE_DEPTH[CMDQ_CW-1:0];
    localparam [CMDQ_CW-1:0] C_ONE = 1;
    localparam [AW-1:0] P_ONE = 1;

    input wire clk;
    input wire rst;  // active-high, synchronous

    input wire push;  // only when not_full
    input wire [INSN_BITS-1:0] push_data;
    output wire not_full;

    input wire pop;  // only when not_empty
    output wire [INSN_BITS-1:0] head;
    output wire not_empty;

    output wire [CMDQ_CW-1:0] count;

    reg [INSN_BITS-1:0] mem[0:CMD_QUEUE_DEPTH-1];
    reg [AW-1:0] rd_ptr;
    reg [AW-1:0] wr_ptr;
    reg [CMDQ_CW-1:0] cnt;

    always @(posedge clk) begin
        if (push) begin
            mem[wr_ptr] <= push_data;
        end
    end

    always @(posedge clk) begin
        if (rst) begin
            rd_ptr <= {AW{1'b0}};
            wr_ptr <= {AW{1'b0}};
            cnt <= {CMDQ_CW{1'b0}};
        end else begin
            if (push) begin
                wr_ptr <= wr_ptr + P_ONE;
            end
            if (pop) begin
                rd_ptr <= rd_ptr + P_ONE;
            end
            if (push && !pop) begin
                cnt <= cnt + C_ONE;
            end else if (pop && !push) begin
                cnt <= cnt - C_ONE;
            end
        end
    end

    assign head = mem[rd_ptr];
    assign not_full = (cnt != FULL);
    assign not_empty = (cnt != {CMDQ_CW{1'b0}});
    assign count = cnt;

endmodule
`default_nettype wire
