`default_nettype none
// Cycle statistics of a run (docs/timing.md section 6): for each of fetch, load, compute and
// store, how many cycles fell in each category (busy, waiting on a token or queue, waiting
// on memory, idle). Every cycle of the run counts once per module, the FINISH cycle included,
// so each module's four counters sum to the run's cycle count.
module vta_stats (
    clk,
    rst,
    // run control
    start,
    running,
    // category of this cycle: {store, compute, load, fetch}, CAT_* each
    category,
    // counters: module m, category c at [(4 * m + c) * CNT_W +: CNT_W]
    counts
);
/* verilator lint_off UNUSEDPARAM */  // the headers declare every constant; a module uses some
`include "vta_params.vh"
`include "vta_derived.vh"
/* verilator lint_on UNUSEDPARAM */

    localparam integer N = 16;  // 4 modules x 4 categories
    localparam [CNT_W-1:0] CNT_ONE = 1;

    input wire clk;
    input wire rst;  // active-high, synchronous

    input wire start;  // clears the counters
    input wire running;  // counts this cycle
    input wire [7:0] category;
    output wire [N*CNT_W-1:0] counts;

    reg [CNT_W-1:0] cnt[0:N-1];
    integer i;

    always @(posedge clk) begin
        if (rst || start) begin
            for (i = 0; i < N; i = i + 1) begin
                cnt[i] <= {CNT_W{1'b0}};
            end
        end else if (running) begin
            for (i = 0; i < 4; i = i + 1) begin
                cnt[4*i+{30'd0, category[2*i+:2]}] <= cnt[4*i+{30'd0, category[2*i+:2]}] + CNT_ONE;
            end
        end
    end

    genvar g;
    generate
        for (g = 0; g < N; g = g + 1) begin : g_out
            assign counts[g*CNT_W+:CNT_W] = cnt[g];
        end
    endgenerate

endmodule
`default_nettype wire
