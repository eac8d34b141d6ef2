`default_nettype none
// The single DRAM port (docs/timing.md section 4). Requesters, in fixed priority order:
// 0 fetch, 1 load, 2 compute, 3 store (isa.timing.PORT_PRIORITY). In every cycle in which the
// port is free (registered), it is granted to the first asking requester; the grant cycle is
// the transfer's first cycle and its descriptor goes out on the memory port in that cycle.
// The port stays with the owner until the owner's last transfer cycle (`done`, normally its
// last beat) and is free again the next cycle. Beats are routed to the owner. A transfer of
// no rows is not sent to the DRAM; its owner times it (see vta_store).
module vta_port_arbiter (
    clk,
    rst,
    // requesters (packed, requester i at [i])
    req,
    req_addr,
    req_row_bytes,
    req_rows,
    req_stride,
    done,
    grant,
    beat,
    last,
    // memory port
    mem_req_valid,
    mem_req_write,
    mem_req_addr,
    mem_req_row_bytes,
    mem_req_rows,
    mem_req_stride,
    mem_beat,
    mem_last,
    // observation
    busy
);
/* verilator lint_off UNUSEDPARAM */  // the headers declare every constant; a module uses some
`include "vta_params.vh"
`include "vta_derived.vh"
/* verilator lint_on UNUSEDPARAM */

    localparam integer N = 4;  // fetch, load, compute, store
    localparam integer STORE = 3;  // the only requester that writes

    input wire clk;
    input wire rst;  // active-high, synchronous

    input wire [N-1:0] req;
    input wire [N*DADDR_W-1:0] req_addr;
    input wire [N*ROWB_W-1:0] req_row_bytes;
    input wire [N*ROWS_W-1:0] req_rows;
    input wire [N*STRB_W-1:0] req_stride;
    input wire [N-1:0] done;  // the owner's last transfer cycle
    output wire [N-1:0] grant;
    output wire [N-1:0] beat;
    output wire [N-1:0] last;

    output wire mem_req_valid;
    output wire mem_req_write;
    output wire [DADDR_W-1:0] mem_req_addr;
    output wire [ROWB_W-1:0] mem_req_row_bytes;
    output wire [ROWS_W-1:0] mem_req_rows;
    output wire [STRB_W-1:0] mem_req_stride;
    input wire mem_beat;
    input wire mem_last;

    output wire busy;

    reg busy_r;
    reg [N-1:0] owner;  // one-hot

    // Fixed priority: requester i wins if it asks and no lower index asks.
    wire free = !busy_r;
    assign grant[0] = free && req[0];
    assign grant[1] = free && req[1] && !req[0];
    assign grant[2] = free && req[2] && !req[1] && !req[0];
    assign grant[3] = free && req[3] && !req[2] && !req[1] && !req[0];
    wire any_grant = |grant;

    // Descriptor of the granted requester.
    reg [DADDR_W-1:0] g_addr;
    reg [ROWB_W-1:0] g_row_bytes;
    reg [ROWS_W-1:0] g_rows;
    reg [STRB_W-1:0] g_stride;
    integer r;
    always @(*) begin
        g_addr = {DADDR_W{1'b0}};
        g_row_bytes = {ROWB_W{1'b0}};
        g_rows = {ROWS_W{1'b0}};
        g_stride = {STRB_W{1'b0}};
        for (r = 0; r < N; r = r + 1) begin
            if (grant[r]) begin
                g_addr = req_addr[r*DADDR_W+:DADDR_W];
                g_row_bytes = req_row_bytes[r*ROWB_W+:ROWB_W];
                g_rows = req_rows[r*ROWS_W+:ROWS_W];
                g_stride = req_stride[r*STRB_W+:STRB_W];
            end
        end
    end

    assign mem_req_valid = any_grant && (g_rows != {ROWS_W{1'b0}});
    assign mem_req_write = grant[STORE];
    assign mem_req_addr = g_addr;
    assign mem_req_row_bytes = g_row_bytes;
    assign mem_req_rows = g_rows;
    assign mem_req_stride = g_stride;

    assign beat = (busy_r && mem_beat) ? owner : {N{1'b0}};
    assign last = (busy_r && mem_last) ? owner : {N{1'b0}};
    assign busy = busy_r;

    // The transfer that ends this cycle: the owner's, or one granted and ended in one cycle.
    wire ends = busy_r ? |(done & owner) : |(done & grant);

    always @(posedge clk) begin
        if (rst) begin
            busy_r <= 1'b0;
            owner <= {N{1'b0}};
        end else if (busy_r) begin
            if (ends) begin
                busy_r <= 1'b0;
            end
        end else if (any_grant) begin
            busy_r <= !ends;
            owner <= grant;
        end
    end

endmodule
`default_nettype wire
