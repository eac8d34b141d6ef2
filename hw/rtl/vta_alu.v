`default_nettype none
// The tensor ALU: acc[a] = op(acc[a], imm or acc[x]) lane by lane over BATCH x BLOCK_OUT
// int32 lanes, with out[a] = the low 8 bits. One acc read port serves both operands, so a
// micro-op with an acc operand (use_imm = 0) needs two cycles of it and such micro-ops arrive
// at most every 2 cycles (ALU_II >= 2):
//   S1  (input)  read acc[a]
//   S2           keep acc[a]; read acc[x]
//   S3           compute; write acc[a] and out[a]
// A micro-op with an immediate (use_imm = 1) reads acc once, so it can arrive every cycle
// (ALU_IMM_II >= 1) and takes one stage less:
//   S1  (input)  read acc[a]
//   S2           compute; write acc[a] and out[a]
// The next micro-op reads acc in the cycle of this write (write-first buffer), so dependent
// micro-ops see each other's results. The sequencer enters an acc-operand micro-op one cycle
// earlier in its slot than an immediate one, so in both cases the last write lands
// ALU_PIPE_LATENCY = 2 cycles after the end of the last micro-op's slot (S0 comes first).
// Ops (isa.semantics.alu_apply): MIN, MAX, ADD (wraps), SHR (arithmetic right shift by y >= 0,
// capped at 31; y < 0 shifts left by -y, 0 from 32 on), MUL (low 32 bits). Other opcodes
// leave acc[a] unchanged. With reset the result is 0.
module vta_alu (
    clk,
    rst,
    // instruction constants (held for the whole instruction)
    op,
    use_imm,
    imm,
    // micro-ops (stage S1)
    in_valid,
    in_reset,
    in_dst,
    in_src,
    in_last,
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
    localparam integer LANES = BATCH * BLOCK_OUT;
    localparam integer OW = ALU_ALU_OPCODE_W;
    localparam [OW-1:0] OP_MIN = ALU_MIN[OW-1:0];
    localparam [OW-1:0] OP_MAX = ALU_MAX[OW-1:0];
    localparam [OW-1:0] OP_ADD = ALU_ADD[OW-1:0];
    localparam [OW-1:0] OP_SHR = ALU_SHR[OW-1:0];
    localparam [OW-1:0] OP_MUL = ALU_MUL[OW-1:0];

    input wire clk;
    input wire rst;  // active-high, synchronous

    input wire [OW-1:0] op;
    input wire use_imm;
    input wire [ALU_IMM_W-1:0] imm;  // signed

    input wire in_valid;
    input wire in_reset;
    input wire [AW-1:0] in_dst;
    input wire [AW-1:0] in_src;
    input wire in_last;

    output wire acc_rd_en;
    output wire [AW-1:0] acc_rd_addr;
    input wire [ACC_ELEM_BITS-1:0] acc_rd_data;

    output wire wr_en;
    output wire [AW-1:0] wr_addr;
    output wire [ACC_ELEM_BITS-1:0] wr_acc;
    output wire [OUT_ELEM_BITS-1:0] wr_out;
    output wire done;

    // ---- S2
    reg v2;
    reg l2;
    reg r2;
    reg [AW-1:0] a2;
    reg [AW-1:0] x2;
    // ---- S3
    reg v3;
    reg l3;
    reg r3;
    reg [AW-1:0] a3;
    reg [ACC_ELEM_BITS-1:0] d3;  // acc[a]

    // S2 reads acc[x] only for an acc operand; an immediate micro-op may be in S1 meanwhile.
    assign acc_rd_en = in_valid || (v2 && !use_imm);
    assign acc_rd_addr = in_valid ? in_dst : x2;

    wire [ACC_BITS-1:0] imm_ext = {{(ACC_BITS - ALU_IMM_W) {imm[ALU_IMM_W-1]}}, imm};

    genvar q;
    generate
        for (q = 0; q < LANES; q = q + 1) begin : g_lane
            // with an immediate, acc[a] arrives from the read port in S2 and is used at once
            wire signed [ACC_BITS-1:0] xv = use_imm ? acc_rd_data[q*ACC_BITS+:ACC_BITS] :
                d3[q*ACC_BITS+:ACC_BITS];
            wire signed [ACC_BITS-1:0] yv = use_imm ? imm_ext : acc_rd_data[q*ACC_BITS+:ACC_BITS];
            wire signed [ACC_BITS:0] neg_y = -{yv[ACC_BITS-1], yv};  // -y without overflow
            wire right_big = (yv > 31);
            wire left_big = (neg_y > 31);
            wire [4:0] rsh = right_big ? 5'd31 : yv[4:0];
            wire [4:0] lsh = neg_y[4:0];
            wire signed [ACC_BITS-1:0] prod = xv * yv;  // MUL keeps the low 32 bits
            reg [ACC_BITS-1:0] res;
            always @(*) begin
                case (op)
                    OP_MIN: res = (xv < yv) ? xv : yv;
                    OP_MAX: res = (xv > yv) ? xv : yv;
                    OP_ADD: res = xv + yv;
                    OP_SHR: begin
                        if (!yv[ACC_BITS-1]) begin
                            res = xv >>> rsh;
                        end else if (left_big) begin
                            res = {ACC_BITS{1'b0}};
                        end else begin
                            res = xv << lsh;
                        end
                    end
                    OP_MUL: res = prod[ACC_BITS-1:0];
                    default: res = xv;
                endcase
            end
            wire [ACC_BITS-1:0] v = (use_imm ? r2 : r3) ? {ACC_BITS{1'b0}} : res;
            assign wr_acc[q*ACC_BITS+:ACC_BITS] = v;
            assign wr_out[q*OUT_BITS+:OUT_BITS] = v[OUT_BITS-1:0];
        end
    endgenerate

    assign wr_en = use_imm ? v2 : v3;
    assign wr_addr = use_imm ? a2 : a3;
    assign done = use_imm ? (v2 && l2) : (v3 && l3);

    always @(posedge clk) begin
        if (rst) begin
            v2 <= 1'b0;
            v3 <= 1'b0;
            l2 <= 1'b0;
            l3 <= 1'b0;
        end else begin
            v2 <= in_valid;
            // an immediate micro-op leaves the pipe at S2 and must not reach S3, where the next
            // instruction (with an acc operand) would take it for one of its own
            v3 <= v2 && !use_imm;
            l2 <= in_valid && in_last;
            l3 <= v2 && l2 && !use_imm;
        end
    end

    always @(posedge clk) begin
        r2 <= in_reset;
        a2 <= in_dst;
        x2 <= in_src;
        r3 <= r2;
        a3 <= a2;
        d3 <= acc_rd_data;
    end

endmodule
`default_nettype wire
