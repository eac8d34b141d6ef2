`default_nettype none
// The GEMM core: one micro-op per cycle, pipelined.
//   S1  (input)  indices a (acc), x (inp), w (wgt); read inp[x] and wgt[w]
//   S2           BATCH x BLOCK_OUT x BLOCK_IN int8 products
//   S3           reduce the products over BLOCK_IN; read acc[a]
//   S4           acc[a] += sums (or 0 with reset); write acc[a] and out[a] (low 8 bits)
// A micro-op entering S1 in cycle t writes at the end of t + 3, and the next micro-op reads
// acc in that same cycle t + 3: the acc buffer is write-first, so back-to-back micro-ops that
// update the same entry see each other's results with no stall. With the sequencer's S0 in
// front, the last write lands GEMM_PIPE_LATENCY = 4 cycles after the last micro-op's slot.
// Tiles: inp[x] is (BATCH, BLOCK_IN) int8, wgt[w] is (BLOCK_OUT, BLOCK_IN) int8 (out-major),
// acc[a] is (BATCH, BLOCK_OUT) int32, out[a] is (BATCH, BLOCK_OUT) int8; C order, little-endian.
module vta_gemm (
    clk,
    rst,
    // micro-ops (stage S1)
    in_valid,
    in_reset,
    in_dst,
    in_src,
    in_wgt,
    in_last,
    // inp buffer read port
    inp_rd_en,
    inp_rd_addr,
    inp_rd_data,
    // wgt buffer read port
    wgt_rd_en,
    wgt_rd_addr,
    wgt_rd_data,
    // acc buffer read port
    acc_rd_en,
    acc_rd_addr,
    acc_rd_data,
    // acc and out buffer write
    wr_en,
    wr_addr,
    wr_acc,
    wr_out,
    done
);
/* verilator lint_off UNUSEDPARAM */  // the headers declare every constant; a module uses some
`include "vta_params.vh"
`include "vta_derived.vh"
/* verilator lint_on UNUSEDPARAM */

    localparam integer AW = LOG_ACC_DEPTH;
    localparam integer LANES = BATCH * BLOCK_OUT;  // acc lanes of one tile
    localparam integer NPROD = LANES * BLOCK_IN;
    localparam integer PB = INP_BITS + WGT_BITS;  // bits of one product

    input wire clk;
    input wire rst;  // active-high, synchronous

    input wire in_valid;
    input wire in_reset;  // the instruction zeroes acc instead of accumulating
    input wire [AW-1:0] in_dst;
    input wire [LOG_INP_DEPTH-1:0] in_src;
    input wire [LOG_WGT_DEPTH-1:0] in_wgt;
    input wire in_last;  // the instruction's last micro-op

    output wire inp_rd_en;
    output wire [LOG_INP_DEPTH-1:0] inp_rd_addr;
    input wire [INP_ELEM_BITS-1:0] inp_rd_data;

    output wire wgt_rd_en;
    output wire [LOG_WGT_DEPTH-1:0] wgt_rd_addr;
    input wire [WGT_ELEM_BITS-1:0] wgt_rd_data;

    output wire acc_rd_en;
    output wire [AW-1:0] acc_rd_addr;
    input wire [ACC_ELEM_BITS-1:0] acc_rd_data;

    output wire wr_en;
    output wire [AW-1:0] wr_addr;
    output wire [ACC_ELEM_BITS-1:0] wr_acc;
    output wire [OUT_ELEM_BITS-1:0] wr_out;
    output wire done;  // the instruction's last write is in this cycle

    // ---- S1
    assign inp_rd_en = in_valid && !in_reset;
    assign inp_rd_addr = in_src;
    assign wgt_rd_en = in_valid && !in_reset;
    assign wgt_rd_addr = in_wgt;

    // ---- S2: products
    reg v2;
    reg r2;
    reg l2;
    reg [AW-1:0] a2;
    wire [NPROD*PB-1:0] prod;
    genvar b;
    genvar o;
    genvar c;
    generate
        for (b = 0; b < BATCH; b = b + 1) begin : g_b
            for (o = 0; o < BLOCK_OUT; o = o + 1) begin : g_o
                for (c = 0; c < BLOCK_IN; c = c + 1) begin : g_c
                    wire signed [INP_BITS-1:0] xv = inp_rd_data[(b*BLOCK_IN+c)*INP_BITS+:INP_BITS];
                    wire signed [WGT_BITS-1:0] wv = wgt_rd_data[(o*BLOCK_IN+c)*WGT_BITS+:WGT_BITS];
                    wire signed [PB-1:0] pv = xv * wv;
                    assign prod[((b*BLOCK_OUT+o)*BLOCK_IN+c)*PB+:PB] = pv;
                end
            end
        end
    endgenerate

    // ---- S3: reduction, acc read
    reg v3;
    reg r3;
    reg l3;
    reg [AW-1:0] a3;
    reg [NPROD*PB-1:0] prod3;
    reg [LANES*ACC_BITS-1:0] sums;
    integer lane;
    integer k;
    always @(*) begin
        sums = {(LANES * ACC_BITS) {1'b0}};
        for (lane = 0; lane < LANES; lane = lane + 1) begin
            for (k = 0; k < BLOCK_IN; k = k + 1) begin
                sums[lane*ACC_BITS+:ACC_BITS] = sums[lane*ACC_BITS+:ACC_BITS] +
                    {{(ACC_BITS - PB) {prod3[(lane*BLOCK_IN+k)*PB+PB-1]}},
                     prod3[(lane*BLOCK_IN+k)*PB+:PB]};
            end
        end
    end
    assign acc_rd_en = v3 && !r3;
    assign acc_rd_addr = a3;

    // ---- S4: accumulate, write
    reg v4;
    reg r4;
    reg l4;
    reg [AW-1:0] a4;
    reg [LANES*ACC_BITS-1:0] sums4;
    wire [ACC_ELEM_BITS-1:0] acc_new;
    wire [OUT_ELEM_BITS-1:0] out_new;
    genvar q;
    generate
        for (q = 0; q < LANES; q = q + 1) begin : g_lane
            wire [ACC_BITS-1:0] v = r4 ? {ACC_BITS{1'b0}} :
                acc_rd_data[q*ACC_BITS+:ACC_BITS] + sums4[q*ACC_BITS+:ACC_BITS];
            assign acc_new[q*ACC_BITS+:ACC_BITS] = v;
            assign out_new[q*OUT_BITS+:OUT_BITS] = v[OUT_BITS-1:0];
        end
    endgenerate
    assign wr_en = v4;
    assign wr_addr = a4;
    assign wr_acc = acc_new;
    assign wr_out = out_new;
    assign done = v4 && l4;

    always @(posedge clk) begin
        if (rst) begin
            v2 <= 1'b0;
            v3 <= 1'b0;
            v4 <= 1'b0;
            l2 <= 1'b0;
            l3 <= 1'b0;
            l4 <= 1'b0;
        end else begin
            v2 <= in_valid;
            v3 <= v2;
            v4 <= v3;
            l2 <= in_valid && in_last;
            l3 <= v2 && l2;
            l4 <= v3 && l3;
        end
    end

    always @(posedge clk) begin
        r2 <= in_reset;
        a2 <= in_dst;
        r3 <= r2;
        a3 <= a2;
        prod3 <= prod;
        r4 <= r3;
        a4 <= a3;
        sums4 <= sums;
    end

endmodule
`default_nettype wire
