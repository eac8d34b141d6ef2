`default_nettype none
// The sequence of a LOAD after its issue cycle (docs/timing.md sections 3 and 4): zero padding
// at one entry per cycle, then a request for the DRAM port (from the first cycle after the
// padding), then the transfer: one 2-D descriptor, its beats arriving from dram_latency cycles
// after the grant. The instruction's last cycle (`done`) is the cycle of the last beat, or the
// last padding cycle of a LOAD with y_size = 0 (which never asks for the port).
// The element size of the memory type arrives as its log2 (`log_eb`); the parent turns the
// beats into entries (vta_dma_rx) and routes padding writes to the right buffer.
module vta_dma_load (
    clk,
    rst,
    // instruction at the head of the command queue (sampled on start)
    start,
    sram_base,
    dram_base,
    y_size,
    x_size,
    x_stride,
    y_pad_0,
    y_pad_1,
    x_pad_0,
    x_pad_1,
    log_eb,
    zero,
    row0,
    pitch,
    // zero padding
    pad_wr_en,
    pad_wr_addr,
    // DRAM port requester
    req,
    req_addr,
    req_row_bytes,
    req_rows,
    req_stride,
    grant,
    beat,
    last,
    // status
    done,
    waiting
);
/* verilator lint_off UNUSEDPARAM */  // the headers declare every constant; a module uses some
`include "vta_params.vh"
`include "vta_derived.vh"
/* verilator lint_on UNUSEDPARAM */

    localparam integer PW = MEM_Y_PAD_0_W;
    localparam integer YW = MEM_Y_SIZE_W;
    localparam integer XW = MEM_X_SIZE_W;
    localparam integer LEW = $clog2(LOG_MAX_EB + 1);  // width of log_eb
    localparam [1:0] S_IDLE = 2'd0;
    localparam [1:0] S_PAD = 2'd1;
    localparam [1:0] S_REQ = 2'd2;
    localparam [1:0] S_XFER = 2'd3;

    input wire clk;
    input wire rst;  // active-high, synchronous

    input wire start;  // the issue cycle of a LOAD with E > 0 (see `zero`)
    input wire [SADDR_W-1:0] sram_base;
    input wire [MEM_DRAM_BASE_W-1:0] dram_base;
    input wire [YW-1:0] y_size;
    input wire [XW-1:0] x_size;
    input wire [MEM_X_STRIDE_W-1:0] x_stride;
    input wire [PW-1:0] y_pad_0;
    input wire [PW-1:0] y_pad_1;
    input wire [PW-1:0] x_pad_0;
    input wire [PW-1:0] x_pad_1;
    input wire [LEW-1:0] log_eb;  // log2 of the memory type's element bytes
    output wire zero;  // combinational: the instruction on the inputs has E = 0
    output wire [SADDR_W-1:0] row0;  // combinational: SRAM entry of its first data element
    output wire [SADDR_W-1:0] pitch;  // combinational: its padded row width

    output wire pad_wr_en;
    output wire [SADDR_W-1:0] pad_wr_addr;

    output wire req;
    output wire [DADDR_W-1:0] req_addr;
    output wire [ROWB_W-1:0] req_row_bytes;
    output wire [ROWS_W-1:0] req_rows;
    output wire [STRB_W-1:0] req_stride;
    input wire grant;
    input wire beat;
    input wire last;

    output wire done;  // the instruction's last cycle
    output wire waiting;  // asking for the port

    reg [1:0] st;
    reg y_zero;
    reg [DADDR_W-1:0] addr_r;
    reg [ROWB_W-1:0] row_bytes_r;
    reg [ROWS_W-1:0] rows_r;
    reg [STRB_W-1:0] stride_r;

    wire pad_none;
    wire pad_last;

    vta_pad_gen u_pad (
        .clk(clk),
        .rst(rst),
        .start(start),
        .sram_base(sram_base),
        .y_size(y_size),
        .x_size(x_size),
        .y_pad_0(y_pad_0),
        .y_pad_1(y_pad_1),
        .x_pad_0(x_pad_0),
        .x_pad_1(x_pad_1),
        .none(pad_none),
        .wr_en(pad_wr_en),
        .wr_addr(pad_wr_addr),
        .last(pad_last)
    );

    wire in_y_zero = (y_size == {YW{1'b0}});
    // E = 0: a NOP (x_size = 0), or nothing to pad and no row to move.
    assign zero = (x_size == {XW{1'b0}}) || (in_y_zero && y_pad_0 == {PW{1'b0}} &&
                                             y_pad_1 == {PW{1'b0}});
    /* verilator lint_off WIDTHTRUNC */  // SRAM addresses wrap at SADDR_W bits
    assign pitch = {{(SADDR_W - PW) {1'b0}}, x_pad_0} + x_size[SADDR_W-1:0] +
                   {{(SADDR_W - PW) {1'b0}}, x_pad_1};
    assign row0 = sram_base + {{(SADDR_W - PW) {1'b0}}, y_pad_0} * pitch +
                  {{(SADDR_W - PW) {1'b0}}, x_pad_0};
    /* verilator lint_on WIDTHTRUNC */

    assign req = (st == S_REQ);
    assign waiting = req;
    assign req_addr = addr_r;
    assign req_row_bytes = row_bytes_r;
    assign req_rows = rows_r;
    assign req_stride = stride_r;
    assign done = (st == S_PAD && pad_last && y_zero) || (st == S_XFER && beat && last);

    always @(posedge clk) begin
        if (rst) begin
            st <= S_IDLE;
            y_zero <= 1'b0;
            addr_r <= {DADDR_W{1'b0}};
            row_bytes_r <= {ROWB_W{1'b0}};
            rows_r <= {ROWS_W{1'b0}};
            stride_r <= {STRB_W{1'b0}};
        end else begin
            case (st)
                S_IDLE: begin
                    if (start) begin
                        st <= pad_none ? S_REQ : S_PAD;
                        y_zero <= in_y_zero;
                        addr_r <= {{(DADDR_W - MEM_DRAM_BASE_W) {1'b0}}, dram_base} << log_eb;
                        row_bytes_r <= {{(ROWB_W - XW) {1'b0}}, x_size} << log_eb;
                        rows_r <= y_size;
                        stride_r <= {{(STRB_W - MEM_X_STRIDE_W) {1'b0}}, x_stride} << log_eb;
                    end
                end
                S_PAD: begin
                    if (pad_last) begin
                        st <= y_zero ? S_IDLE : S_REQ;
                    end
                end
                S_REQ: begin
                    if (grant) begin
                        st <= S_XFER;
                    end
                end
                default: begin  // S_XFER
                    if (beat && last) begin
                        st <= S_IDLE;
                    end
                end
            endcase
        end
    end

endmodule
`default_nettype wire
