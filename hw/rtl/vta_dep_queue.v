`default_nettype none
// A dependency-token queue: tokens carry no data, so the queue is a counter that holds up to
// DEP_QUEUE_DEPTH tokens. Producer and consumer decide from the registered count (the state at
// the start of the cycle, docs/timing.md section 1): a token pushed in cycle t is visible from
// t + 1, and a pop in the same cycle does not make room for a push.
module vta_dep_queue (
    clk,
    rst,
    // producer
    push,
    not_full,
    // consumer
    pop,
    not_empty,
    // observation
    count
);
/* verilator lint_off UNUSEDPARAM */  // the headers declare every constant; a module uses some
`include "vta_params.vh"
`include "vta_derived.vh"
/* verilator lint_on UNUSEDPARAM */

    localparam [DEPQ_CW-1:0] FULL = DEP_QUEUE_DEPTH[DEPQ_CW-1:0];
    localparam [DEPQ_CW-1:0] ONE = 1;

    input wire clk;
    input wire rst;  // active-high, synchronous

    input wire push;  // add a token; the producer only pushes when not_full
    output wire not_full;

    input wire pop;  // take a token; the consumer only pops when not_empty
    output wire not_empty;

    output wire [DEPQ_CW-1:0] count;  // tokens held

    reg [DEPQ_CW-1:0] cnt;

    always @(posedge clk) begin
        if (rst) begin
            cnt <= {DEPQ_CW{1'b0}};
        end else if (push && !pop) begin
            cnt <= cnt + ONE;
        end else if (pop && !push) begin
            cnt <= cnt - ONE;
        end
    end

    assign not_full = (cnt != FULL);
    assign not_empty = (cnt != {DEPQ_CW{1'b0}});
    assign count = cnt;

endmodule
`default_nettype wire
