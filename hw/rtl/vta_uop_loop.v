`default_nettype none
// Micro-op sequencer of GEMM and ALU: walks i < iter_out, j < iter_in, k in [uop_begin,
// uop_end), reads micro-op k from the uop buffer (stage S0) and, a cycle later, adds the loop
// offsets to its fields (stage S1):
//   dst + i * dst_factor_out + j * dst_factor_in  (acc index)
//   src + i * src_factor_out + j * src_factor_in  (inp index for GEMM, acc index for ALU)
//   wgt + i * wgt_factor_out + j * wgt_factor_in  (wgt index; GEMM only)
// The offsets are kept as running sums, so no multiplier is needed.
// Pacing: micro-op n owns the issue slot of cycles s + 1 + n * II .. s + (n + 1) * II after
// the issue cycle s, and enters S0 at offset II - II_MIN of its slot (II_MIN = the pipeline's own
// spacing: 1 for GEMM, 2 for an ALU micro-op with an acc operand, whose one acc read port serves
// two reads per micro-op, 1 for an ALU micro-op with an immediate, which reads acc once). II is
// GEMM_II, ALU_II or ALU_IMM_II by the instruction's kind (use_imm picks between the last two).
// Each micro-op then reaches its write a fixed number of cycles after the end of its slot,
// which is GEMM_PIPE_LATENCY / ALU_PIPE_LATENCY of docs/timing.md.
module vta_uop_loop (
    clk,
    rst,
    // instruction (sampled on start)
    start,
    is_alu,
    is_imm,
    uop_begin,
    uop_end,
    iter_out,
    iter_in,
    dst_factor_out,
    dst_factor_in,
    src_factor_out,
    src_factor_in,
    wgt_factor_out,
    wgt_factor_in,
    // uop buffer read port
    uop_rd_en,
    uop_rd_addr,
    uop_rd_data,
    // micro-ops with their indices (stage S1)
    out_valid,
    out_dst,
    out_src,
    out_wgt,
    out_last
);
/* verilator lint_off UNUSEDPARAM */  // the headers declare every constant; a module uses some
`include "vta_params.vh"
`include "vta_derived.vh"
/* verilator lint_on UNUSEDPARAM */

    localparam integer UB = GEMM_UOP_BEGIN_W;  // = LOG_UOP_DEPTH
    localparam integer UE = GEMM_UOP_END_W;  // = LOG_UOP_DEPTH + 1
    localparam integer IW = GEMM_ITER_OUT_W;
    localparam integer AW = LOG_ACC_DEPTH;
    localparam integer WW = LOG_WGT_DEPTH;
    localparam integer II_W = 8;  // slot counter (II up to 255)
    localparam integer GEMM_AT_I = GEMM_II - 1;  // S0 offset of a GEMM micro-op in its slot
    localparam integer ALU_AT_I = ALU_II - 2;  // S0 offset of an ALU micro-op in its slot
    localparam integer ALU_END_I = ALU_II - 1;
    localparam integer IMM_AT_I = ALU_IMM_II - 1;  // S0 offset of an immediate ALU micro-op
    localparam [II_W-1:0] GEMM_AT = GEMM_AT_I[II_W-1:0];
    localparam [II_W-1:0] ALU_AT = ALU_AT_I[II_W-1:0];
    localparam [II_W-1:0] GEMM_END = GEMM_AT_I[II_W-1:0];  // last cycle of a GEMM slot
    localparam [II_W-1:0] ALU_END = ALU_END_I[II_W-1:0];  // last cycle of an ALU slot
    localparam [II_W-1:0] IMM_AT = IMM_AT_I[II_W-1:0];  // also the last cycle of its slot
    localparam [II_W-1:0] S_ONE = 1;
    localparam [UE-1:0] U_ONE = 1;
    localparam [IW-1:0] I_ONE = 1;

    input wire clk;
    input wire rst;  // active-high, synchronous

    input wire start;  // issue cycle of a GEMM/ALU with at least one micro-op
    input wire is_alu;
    input wire is_imm;  // an ALU instruction with use_imm = 1
    input wire [UB-1:0] uop_begin;
    input wire [UE-1:0] uop_end;
    input wire [IW-1:0] iter_out;
    input wire [IW-1:0] iter_in;
    input wire [AW-1:0] dst_factor_out;
    input wire [AW-1:0] dst_factor_in;
    input wire [SRC_W-1:0] src_factor_out;
    input wire [SRC_W-1:0] src_factor_in;
    input wire [WW-1:0] wgt_factor_out;
    input wire [WW-1:0] wgt_factor_in;

    output wire uop_rd_en;
    output wire [LOG_UOP_DEPTH-1:0] uop_rd_addr;
    input wire [UOP_ELEM_BITS-1:0] uop_rd_data;

    output wire out_valid;
    output wire [AW-1:0] out_dst;
    output wire [SRC_W-1:0] out_src;
    output wire [WW-1:0] out_wgt;
    output wire out_last;

    // ---- loop state (S0)
    reg active;
    reg alu;
    reg imm;
    reg [II_W-1:0] slot;
    reg [UE-1:0] k;
    reg [UE-1:0] k_begin;
    reg [UE-1:0] k_end;
    reg [IW-1:0] i;
    reg [IW-1:0] j;
    reg [IW-1:0] n_out;
    reg [IW-1:0] n_in;
    reg [AW-1:0] dfo;
    reg [AW-1:0] dfi;
    reg [SRC_W-1:0] sfo;
    reg [SRC_W-1:0] sfi;
    reg [WW-1:0] wfo;
    reg [WW-1:0] wfi;
    reg [AW-1:0] dst_i;  // i * dst_factor_out
    reg [AW-1:0] dst_ij;  // ... + j * dst_factor_in
    reg [SRC_W-1:0] src_i;
    reg [SRC_W-1:0] src_ij;
    reg [WW-1:0] wgt_i;
    reg [WW-1:0] wgt_ij;

    wire [II_W-1:0] emit_at = imm ? IMM_AT : (alu ? ALU_AT : GEMM_AT);
    wire [II_W-1:0] slot_end = imm ? IMM_AT : (alu ? ALU_END : GEMM_END);
    wire emit = active && (slot == emit_at);
    wire k_wrap = (k + U_ONE == k_end);
    wire j_wrap = (j + I_ONE == n_in);
    wire i_wrap = (i + I_ONE == n_out);
    wire last_uop = k_wrap && j_wrap && i_wrap;

    assign uop_rd_en = emit;
    assign uop_rd_addr = k[LOG_UOP_DEPTH-1:0];

    always @(posedge clk) begin
        if (rst) begin
            active <= 1'b0;
            alu <= 1'b0;
            imm <= 1'b0;
            slot <= {II_W{1'b0}};
            k <= {UE{1'b0}};
            k_begin <= {UE{1'b0}};
            k_end <= {UE{1'b0}};
            i <= {IW{1'b0}};
            j <= {IW{1'b0}};
            n_out <= {IW{1'b0}};
            n_in <= {IW{1'b0}};
            dfo <= {AW{1'b0}};
            dfi <= {AW{1'b0}};
            sfo <= {SRC_W{1'b0}};
            sfi <= {SRC_W{1'b0}};
            wfo <= {WW{1'b0}};
            wfi <= {WW{1'b0}};
            dst_i <= {AW{1'b0}};
            dst_ij <= {AW{1'b0}};
            src_i <= {SRC_W{1'b0}};
            src_ij <= {SRC_W{1'b0}};
            wgt_i <= {WW{1'b0}};
            wgt_ij <= {WW{1'b0}};
        end else if (start) begin
            active <= 1'b1;
            alu <= is_alu;
            imm <= is_alu && is_imm;
            slot <= {II_W{1'b0}};
            k <= {1'b0, uop_begin};
            k_begin <= {1'b0, uop_begin};
            k_end <= uop_end;
            i <= {IW{1'b0}};
            j <= {IW{1'b0}};
            n_out <= iter_out;
            n_in <= iter_in;
            dfo <= dst_factor_out;
            dfi <= dst_factor_in;
            sfo <= src_factor_out;
            sfi <= src_factor_in;
            wfo <= wgt_factor_out;
            wfi <= wgt_factor_in;
            dst_i <= {AW{1'b0}};
            dst_ij <= {AW{1'b0}};
            src_i <= {SRC_W{1'b0}};
            src_ij <= {SRC_W{1'b0}};
            wgt_i <= {WW{1'b0}};
            wgt_ij <= {WW{1'b0}};
        end else if (active) begin
            slot <= (slot == slot_end) ? {II_W{1'b0}} : slot + S_ONE;
            if (emit) begin
                if (last_uop) begin
                    active <= 1'b0;
                end
                if (!k_wrap) begin
                    k <= k + U_ONE;
                end else begin
                    k <= k_begin;
                    if (!j_wrap) begin
                        j <= j + I_ONE;
                        dst_ij <= dst_ij + dfi;
                        src_ij <= src_ij + sfi;
                        wgt_ij <= wgt_ij + wfi;
                    end else begin
                        j <= {IW{1'b0}};
                        i <= i + I_ONE;
                        dst_i <= dst_i + dfo;
                        src_i <= src_i + sfo;
                        wgt_i <= wgt_i + wfo;
                        dst_ij <= dst_i + dfo;
                        src_ij <= src_i + sfo;
                        wgt_ij <= wgt_i + wfo;
                    end
                end
            end
        end
    end

    // ---- S1: micro-op fields + offsets
    reg v1;
    reg l1;
    reg [AW-1:0] od1;
    reg [SRC_W-1:0] os1;
    reg [WW-1:0] ow1;
    always @(posedge clk) begin
        if (rst) begin
            v1 <= 1'b0;
            l1 <= 1'b0;
            od1 <= {AW{1'b0}};
            os1 <= {SRC_W{1'b0}};
            ow1 <= {WW{1'b0}};
        end else begin
            v1 <= emit;
            l1 <= emit && last_uop;
            od1 <= dst_ij;
            os1 <= src_ij;
            ow1 <= wgt_ij;
        end
    end

    assign out_valid = v1;
    assign out_last = l1;
    assign out_dst = uop_rd_data[UOP_DST_LSB+:UOP_DST_W] + od1;
    assign out_src = uop_rd_data[UOP_SRC_LSB+:UOP_SRC_W] + os1;
    assign out_wgt = uop_rd_data[UOP_WGT_LSB+:UOP_WGT_W] + ow1;

endmodule
`default_nettype wire
