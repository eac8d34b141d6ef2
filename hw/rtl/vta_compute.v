`default_nettype none
// The compute module: executes LOAD UOP/ACC/ACC8, GEMM, ALU and FINISH from its command queue,
// in order. It owns the uop and acc buffers, reads inp and wgt, and writes the out buffer
// (every acc write by GEMM or ALU also writes the low 8 bits of each lane to out; loads into
// acc do not). Dependency queues: pops load->compute (pop_prev_dep) and store->compute
// (pop_next_dep), pushes compute->load (push_prev_dep) and compute->store (push_next_dep).
// A LOAD of another memory type (OUT, or one the ISA does not list) executes as a NOP here.
module vta_compute (
    clk,
    rst,
    enable,
    // command queue
    cmd_valid,
    cmd_data,
    cmd_pop,
    // dependency queues
    tok_prev,
    pop_prev,
    tok_next,
    pop_next,
    room_prev,
    push_prev,
    room_next,
    push_next,
    // DRAM port requester
    req,
    req_addr,
    req_row_bytes,
    req_rows,
    req_stride,
    grant,
    beat,
    last,
    rdata,
    // inp and wgt buffer read ports
    inp_rd_en,
    inp_rd_addr,
    inp_rd_data,
    wgt_rd_en,
    wgt_rd_addr,
    wgt_rd_data,
    // out buffer write port
    out_wr_en,
    out_wr_addr,
    out_wr_mask,
    out_wr_data,
    // run control and observation
    finish,
    state,
    category,
    waiting,
    issued,
    // events of this cycle (vta_stats)
    ev_gemm_uop,
    ev_gemm_reset,
    ev_alu_uop,
    ev_alu_op,
    ev_alu_imm,
    ev_uop_rd,
    ev_acc_rd,
    ev_uop_wr_mask,
    ev_acc_wr_mask,
    ev_load_type
);
/* verilator lint_off UNUSEDPARAM */  // the headers declare every constant; a module uses some
`include "vta_params.vh"
`include "vta_derived.vh"
/* verilator lint_on UNUSEDPARAM */

    localparam integer LEW = $clog2(LOG_MAX_EB + 1);
    localparam integer AW = LOG_ACC_DEPTH;
    localparam integer ACC8_LANES = BATCH * BLOCK_OUT;  // int8 lanes of an ACC8 element
    localparam [LEW-1:0] LEB_UOP = LOG_UOP_EB[LEW-1:0];
    localparam [LEW-1:0] LEB_ACC = LOG_ACC_EB[LEW-1:0];
    localparam [LEW-1:0] LEB_ACC8 = LOG_OUT_EB[LEW-1:0];
    localparam [MEM_OPCODE_W-1:0] OPC_LOAD = OPCODE_LOAD[MEM_OPCODE_W-1:0];
    localparam [MEM_OPCODE_W-1:0] OPC_GEMM = OPCODE_GEMM[MEM_OPCODE_W-1:0];
    localparam [MEM_OPCODE_W-1:0] OPC_ALU = OPCODE_ALU[MEM_OPCODE_W-1:0];
    localparam [MEM_OPCODE_W-1:0] OPC_FINISH = OPCODE_FINISH[MEM_OPCODE_W-1:0];
    localparam [MEM_MEMORY_TYPE_W-1:0] MT_UOP = MEM_UOP[MEM_MEMORY_TYPE_W-1:0];
    localparam [MEM_MEMORY_TYPE_W-1:0] MT_ACC = MEM_ACC[MEM_MEMORY_TYPE_W-1:0];
    localparam [MEM_MEMORY_TYPE_W-1:0] MT_ACC8 = MEM_ACC8[MEM_MEMORY_TYPE_W-1:0];
    localparam [CNT_W-1:0] CNT_ONE = 1;
    localparam [1:0] T_UOP = 2'd0;  // the current LOAD fills uop
    localparam [1:0] T_ACC = 2'd1;  // ... acc
    localparam [1:0] T_ACC8 = 2'd2;  // ... acc from int8 elements

    input wire clk;
    input wire rst;  // active-high, synchronous
    input wire enable;  // issuing allowed (low after the run's FINISH)

    input wire cmd_valid;
    input wire [INSN_BITS-1:0] cmd_data;
    output wire cmd_pop;

    input wire tok_prev;  // load->compute holds a token
    output wire pop_prev;
    input wire tok_next;  // store->compute holds a token
    output wire pop_next;
    input wire room_prev;  // compute->load has room
    output wire push_prev;
    input wire room_next;  // compute->store has room
    output wire push_next;

    output wire req;
    output wire [DADDR_W-1:0] req_addr;
    output wire [ROWB_W-1:0] req_row_bytes;
    output wire [ROWS_W-1:0] req_rows;
    output wire [STRB_W-1:0] req_stride;
    input wire grant;
    input wire beat;
    input wire last;
    input wire [BUS_BITS-1:0] rdata;

    output wire inp_rd_en;
    output wire [LOG_INP_DEPTH-1:0] inp_rd_addr;
    /* verilator lint_off UNUSEDSIGNAL */  // GEMM reads one entry of the K-lane ports
    input wire [K_INP*INP_ELEM_BITS-1:0] inp_rd_data;
    output wire wgt_rd_en;
    output wire [LOG_WGT_DEPTH-1:0] wgt_rd_addr;
    input wire [K_WGT*WGT_ELEM_BITS-1:0] wgt_rd_data;
    /* verilator lint_on UNUSEDSIGNAL */

    output wire out_wr_en;
    output wire [LOG_OUT_DEPTH-1:0] out_wr_addr;
    output wire [K_OUT-1:0] out_wr_mask;
    output wire [K_OUT*OUT_ELEM_BITS-1:0] out_wr_data;

    output wire finish;  // FINISH issues in this cycle
    output wire [1:0] state;
    output wire [1:0] category;  // statistics category of this cycle (CAT_*)
    output wire waiting;  // asking for the DRAM port
    output wire [CNT_W-1:0] issued;

    output wire ev_gemm_uop;  // a micro-op enters the GEMM core
    output wire ev_gemm_reset;  // ... of a reset GEMM
    output wire ev_alu_uop;  // a micro-op enters the ALU
    output wire [ALU_ALU_OPCODE_W-1:0] ev_alu_op;  // ... with this opcode
    output wire ev_alu_imm;  // ... and an immediate operand
    output wire ev_uop_rd;  // the uop buffer is read
    output wire ev_acc_rd;  // the acc buffer is read
    output wire [K_UOP-1:0] ev_uop_wr_mask;  // uop entries written (zero when none)
    output wire [K_ACC-1:0] ev_acc_wr_mask;  // acc entries written (zero when none)
    output wire [1:0] ev_load_type;  // the current LOAD fills uop (0), acc (1) or acc8 (2)

    // ---- decode the head
    wire [MEM_OPCODE_W-1:0] h_op = cmd_data[MEM_OPCODE_LSB+:MEM_OPCODE_W];
    wire [MEM_MEMORY_TYPE_W-1:0] h_mt = cmd_data[MEM_MEMORY_TYPE_LSB+:MEM_MEMORY_TYPE_W];
    wire h_load = (h_op == OPC_LOAD) && (h_mt == MT_UOP || h_mt == MT_ACC || h_mt == MT_ACC8);
    wire h_gemm = (h_op == OPC_GEMM);
    wire h_alu = (h_op == OPC_ALU);
    wire h_finish = (h_op == OPC_FINISH);
    // GEMM and ALU share the layout of their fields up to dst_factor_in.
    wire [GEMM_UOP_BEGIN_W-1:0] h_ubegin = cmd_data[GEMM_UOP_BEGIN_LSB+:GEMM_UOP_BEGIN_W];
    wire [GEMM_UOP_END_W-1:0] h_uend = cmd_data[GEMM_UOP_END_LSB+:GEMM_UOP_END_W];
    wire [GEMM_ITER_OUT_W-1:0] h_iout = cmd_data[GEMM_ITER_OUT_LSB+:GEMM_ITER_OUT_W];
    wire [GEMM_ITER_IN_W-1:0] h_iin = cmd_data[GEMM_ITER_IN_LSB+:GEMM_ITER_IN_W];
    wire h_no_uops = (h_iout == {GEMM_ITER_OUT_W{1'b0}}) || (h_iin == {GEMM_ITER_IN_W{1'b0}}) ||
                     ({1'b0, h_ubegin} >= h_uend);
    wire dma_zero;
    wire h_zero = h_load ? dma_zero : ((h_gemm || h_alu) ? h_no_uops : 1'b1);

    wire issue;
    wire exec_done;
    wire dma_done;
    wire gemm_done;
    wire alu_done;
    assign exec_done = dma_done || gemm_done || alu_done;

    vta_issue_ctrl u_ctrl (
        .clk(clk),
        .rst(rst),
        .enable(enable),
        .head_valid(cmd_valid),
        .head_pop_prev(cmd_data[MEM_POP_PREV_DEP_LSB]),
        .head_pop_next(cmd_data[MEM_POP_NEXT_DEP_LSB]),
        .head_push_prev(cmd_data[MEM_PUSH_PREV_DEP_LSB]),
        .head_push_next(cmd_data[MEM_PUSH_NEXT_DEP_LSB]),
        .head_zero(h_zero),
        .tok_prev(tok_prev),
        .tok_next(tok_next),
        .room_prev(room_prev),
        .room_next(room_next),
        .exec_done(exec_done),
        .mem_wait(req && !grant),
        .issue(issue),
        .pop_prev(pop_prev),
        .pop_next(pop_next),
        .push_prev(push_prev),
        .push_next(push_next),
        .state(state),
        .category(category)
    );
    assign cmd_pop = issue;
    assign finish = issue && h_finish;

    // ---- the current instruction
    reg [1:0] cur_type;  // memory type class of the current LOAD
    reg cur_alu;
    reg cur_reset;
    reg [ALU_ALU_OPCODE_W-1:0] cur_aop;
    reg cur_use_imm;
    reg [ALU_IMM_W-1:0] cur_imm;
    reg [CNT_W-1:0] issued_r;
    wire [1:0] h_type = (h_mt == MT_UOP) ? T_UOP : ((h_mt == MT_ACC) ? T_ACC : T_ACC8);
    always @(posedge clk) begin
        if (rst) begin
            cur_type <= T_UOP;
            cur_alu <= 1'b0;
            cur_reset <= 1'b0;
            cur_aop <= {ALU_ALU_OPCODE_W{1'b0}};
            cur_use_imm <= 1'b0;
            cur_imm <= {ALU_IMM_W{1'b0}};
            issued_r <= {CNT_W{1'b0}};
        end else if (issue) begin
            cur_type <= h_type;
            cur_alu <= h_alu;
            cur_reset <= cmd_data[GEMM_RESET_LSB];
            cur_aop <= cmd_data[ALU_ALU_OPCODE_LSB+:ALU_ALU_OPCODE_W];
            cur_use_imm <= cmd_data[ALU_USE_IMM_LSB];
            cur_imm <= cmd_data[ALU_IMM_LSB+:ALU_IMM_W];
            issued_r <= issued_r + CNT_ONE;
        end
    end
    assign issued = issued_r;

    // ---- LOAD: padding, port, transfer
    wire load_start = issue && h_load && !dma_zero;
    wire pad_wr_en;
    wire [SADDR_W-1:0] pad_wr_addr;
    wire [SADDR_W-1:0] row0;
    wire [SADDR_W-1:0] pitch;
    wire [LEW-1:0] h_leb = (h_type == T_UOP) ? LEB_UOP : ((h_type == T_ACC) ? LEB_ACC : LEB_ACC8);

    vta_dma_load u_dma (
        .clk(clk),
        .rst(rst),
        .start(load_start),
        .sram_base(cmd_data[MEM_SRAM_BASE_LSB+:MEM_SRAM_BASE_W]),
        .dram_base(cmd_data[MEM_DRAM_BASE_LSB+:MEM_DRAM_BASE_W]),
        .y_size(cmd_data[MEM_Y_SIZE_LSB+:MEM_Y_SIZE_W]),
        .x_size(cmd_data[MEM_X_SIZE_LSB+:MEM_X_SIZE_W]),
        .x_stride(cmd_data[MEM_X_STRIDE_LSB+:MEM_X_STRIDE_W]),
        .y_pad_0(cmd_data[MEM_Y_PAD_0_LSB+:MEM_Y_PAD_0_W]),
        .y_pad_1(cmd_data[MEM_Y_PAD_1_LSB+:MEM_Y_PAD_1_W]),
        .x_pad_0(cmd_data[MEM_X_PAD_0_LSB+:MEM_X_PAD_0_W]),
        .x_pad_1(cmd_data[MEM_X_PAD_1_LSB+:MEM_X_PAD_1_W]),
        .log_eb(h_leb),
        .zero(dma_zero),
        .row0(row0),
        .pitch(pitch),
        .pad_wr_en(pad_wr_en),
        .pad_wr_addr(pad_wr_addr),
        .req(req),
        .req_addr(req_addr),
        .req_row_bytes(req_row_bytes),
        .req_rows(req_rows),
        .req_stride(req_stride),
        .grant(grant),
        .beat(beat),
        .last(last),
        .done(dma_done),
        .waiting(waiting)
    );

    wire uop_rx_en;
    wire [SADDR_W-1:0] uop_rx_addr;
    wire [K_UOP-1:0] uop_rx_mask;
    wire [K_UOP*UOP_ELEM_BITS-1:0] uop_rx_data;
    vta_dma_rx #(
        .EB(UOP_ELEM_BYTES)
    ) u_rx_uop (
        .clk(clk),
        .rst(rst),
        .start(load_start),
        .row0(row0),
        .pitch(pitch),
        .x_size(cmd_data[MEM_X_SIZE_LSB+:MEM_X_SIZE_W]),
        .beat(beat && cur_type == T_UOP),
        .data(rdata),
        .wr_en(uop_rx_en),
        .wr_addr(uop_rx_addr),
        .wr_mask(uop_rx_mask),
        .wr_data(uop_rx_data)
    );

    localparam integer KA = (BUS_BYTES > ACC_ELEM_BYTES) ? BUS_BYTES / ACC_ELEM_BYTES : 1;
    wire acc_rx_en;
    wire [SADDR_W-1:0] acc_rx_addr;
    wire [KA-1:0] acc_rx_mask;
    wire [KA*ACC_ELEM_BITS-1:0] acc_rx_data;
    vta_dma_rx #(
        .EB(ACC_ELEM_BYTES)
    ) u_rx_acc (
        .clk(clk),
        .rst(rst),
        .start(load_start),
        .row0(row0),
        .pitch(pitch),
        .x_size(cmd_data[MEM_X_SIZE_LSB+:MEM_X_SIZE_W]),
        .beat(beat && cur_type == T_ACC),
        .data(rdata),
        .wr_en(acc_rx_en),
        .wr_addr(acc_rx_addr),
        .wr_mask(acc_rx_mask),
        .wr_data(acc_rx_data)
    );

    wire acc8_rx_en;
    wire [SADDR_W-1:0] acc8_rx_addr;
    wire [K_ACC-1:0] acc8_rx_mask;
    wire [K_ACC*OUT_ELEM_BITS-1:0] acc8_rx_data;
    vta_dma_rx #(
        .EB(OUT_ELEM_BYTES)
    ) u_rx_acc8 (
        .clk(clk),
        .rst(rst),
        .start(load_start),
        .row0(row0),
        .pitch(pitch),
        .x_size(cmd_data[MEM_X_SIZE_LSB+:MEM_X_SIZE_W]),
        .beat(beat && cur_type == T_ACC8),
        .data(rdata),
        .wr_en(acc8_rx_en),
        .wr_addr(acc8_rx_addr),
        .wr_mask(acc8_rx_mask),
        .wr_data(acc8_rx_data)
    );
    // ACC8: sign-extend every int8 lane into an int32 lane.
    wire [K_ACC*ACC_ELEM_BITS-1:0] acc8_wide;
    genvar e;
    generate
        for (e = 0; e < K_ACC * ACC8_LANES; e = e + 1) begin : g_acc8
            wire [OUT_BITS-1:0] byte_v = acc8_rx_data[e*OUT_BITS+:OUT_BITS];
            assign acc8_wide[e*ACC_BITS+:ACC_BITS] = {{(ACC_BITS - OUT_BITS) {byte_v[OUT_BITS-1]}},
                                                      byte_v};
        end
    endgenerate

    // ---- GEMM and ALU
    wire seq_start = issue && (h_gemm || h_alu) && !h_no_uops;
    wire seq_valid;
    wire seq_last;
    wire [AW-1:0] seq_dst;
    wire [SRC_W-1:0] seq_src;
    wire [LOG_WGT_DEPTH-1:0] seq_wgt;
    wire uop_rd_en;
    wire [LOG_UOP_DEPTH-1:0] uop_rd_addr;
    /* verilator lint_off UNUSEDSIGNAL */  // the sequencer reads one entry of the K-lane port
    wire [K_UOP*UOP_ELEM_BITS-1:0] uop_rd_data;
    /* verilator lint_on UNUSEDSIGNAL */
    // GEMM's src factors are LOG_INP_DEPTH wide, ALU's LOG_ACC_DEPTH; both fit SRC_W.
    wire [SRC_W-1:0] h_sfo = h_alu ?
        {{(SRC_W - ALU_SRC_FACTOR_OUT_W) {1'b0}}, cmd_data[ALU_SRC_FACTOR_OUT_LSB+:ALU_SRC_FACTOR_OUT_W]} :
        {{(SRC_W - GEMM_SRC_FACTOR_OUT_W) {1'b0}}, cmd_data[GEMM_SRC_FACTOR_OUT_LSB+:GEMM_SRC_FACTOR_OUT_W]};
    wire [SRC_W-1:0] h_sfi = h_alu ?
        {{(SRC_W - ALU_SRC_FACTOR_IN_W) {1'b0}}, cmd_data[ALU_SRC_FACTOR_IN_LSB+:ALU_SRC_FACTOR_IN_W]} :
        {{(SRC_W - GEMM_SRC_FACTOR_IN_W) {1'b0}}, cmd_data[GEMM_SRC_FACTOR_IN_LSB+:GEMM_SRC_FACTOR_IN_W]};

    vta_uop_loop u_seq (
        .clk(clk),
        .rst(rst),
        .start(seq_start),
        .is_alu(h_alu),
        .is_imm(cmd_data[ALU_USE_IMM_LSB]),
        .uop_begin(h_ubegin),
        .uop_end(h_uend),
        .iter_out(h_iout),
        .iter_in(h_iin),
        .dst_factor_out(cmd_data[GEMM_DST_FACTOR_OUT_LSB+:GEMM_DST_FACTOR_OUT_W]),
        .dst_factor_in(cmd_data[GEMM_DST_FACTOR_IN_LSB+:GEMM_DST_FACTOR_IN_W]),
        .src_factor_out(h_sfo),
        .src_factor_in(h_sfi),
        .wgt_factor_out(cmd_data[GEMM_WGT_FACTOR_OUT_LSB+:GEMM_WGT_FACTOR_OUT_W]),
        .wgt_factor_in(cmd_data[GEMM_WGT_FACTOR_IN_LSB+:GEMM_WGT_FACTOR_IN_W]),
        .uop_rd_en(uop_rd_en),
        .uop_rd_addr(uop_rd_addr),
        .uop_rd_data(uop_rd_data[UOP_ELEM_BITS-1:0]),
        .out_valid(seq_valid),
        .out_dst(seq_dst),
        .out_src(seq_src),
        .out_wgt(seq_wgt),
        .out_last(seq_last)
    );

    wire [ACC_ELEM_BITS-1:0] acc_q;
    wire g_acc_rd_en;
    wire [AW-1:0] g_acc_rd_addr;
    wire g_wr_en;
    wire [AW-1:0] g_wr_addr;
    wire [ACC_ELEM_BITS-1:0] g_wr_acc;
    wire [OUT_ELEM_BITS-1:0] g_wr_out;
    /* verilator lint_off UNUSEDSIGNAL */  // GEMM indexes inp with the low LOG_INP_DEPTH bits
    wire [SRC_W-1:0] gemm_src = seq_src;
    /* verilator lint_on UNUSEDSIGNAL */

    vta_gemm u_gemm (
        .clk(clk),
        .rst(rst),
        .in_valid(seq_valid && !cur_alu),
        .in_reset(cur_reset),
        .in_dst(seq_dst),
        .in_src(gemm_src[LOG_INP_DEPTH-1:0]),
        .in_wgt(seq_wgt),
        .in_last(seq_last),
        .inp_rd_en(inp_rd_en),
        .inp_rd_addr(inp_rd_addr),
        .inp_rd_data(inp_rd_data[INP_ELEM_BITS-1:0]),
        .wgt_rd_en(wgt_rd_en),
        .wgt_rd_addr(wgt_rd_addr),
        .wgt_rd_data(wgt_rd_data[WGT_ELEM_BITS-1:0]),
        .acc_rd_en(g_acc_rd_en),
        .acc_rd_addr(g_acc_rd_addr),
        .acc_rd_data(acc_q),
        .wr_en(g_wr_en),
        .wr_addr(g_wr_addr),
        .wr_acc(g_wr_acc),
        .wr_out(g_wr_out),
        .done(gemm_done)
    );

    wire a_acc_rd_en;
    wire [AW-1:0] a_acc_rd_addr;
    wire a_wr_en;
    wire [AW-1:0] a_wr_addr;
    wire [ACC_ELEM_BITS-1:0] a_wr_acc;
    wire [OUT_ELEM_BITS-1:0] a_wr_out;
    /* verilator lint_off UNUSEDSIGNAL */  // ALU indexes acc with the low LOG_ACC_DEPTH bits
    wire [SRC_W-1:0] alu_src = seq_src;
    /* verilator lint_on UNUSEDSIGNAL */

    vta_alu u_alu (
        .clk(clk),
        .rst(rst),
        .op(cur_aop),
        .use_imm(cur_use_imm),
        .imm(cur_imm),
        .in_valid(seq_valid && cur_alu),
        .in_reset(cur_reset),
        .in_dst(seq_dst),
        .in_src(alu_src[AW-1:0]),
        .in_last(seq_last),
        .acc_rd_en(a_acc_rd_en),
        .acc_rd_addr(a_acc_rd_addr),
        .acc_rd_data(acc_q),
        .wr_en(a_wr_en),
        .wr_addr(a_wr_addr),
        .wr_acc(a_wr_acc),
        .wr_out(a_wr_out),
        .done(alu_done)
    );

    // ---- uop buffer: written by LOAD UOP (padding or data), read by the sequencer
    localparam [K_UOP-1:0] UOP_LANE0 = 1;
    wire pad_uop = pad_wr_en && cur_type == T_UOP;
    /* verilator lint_off UNUSEDSIGNAL */  // buffers use the low bits of SADDR_W
    wire [SADDR_W-1:0] uop_waddr = pad_uop ? pad_wr_addr : uop_rx_addr;
    /* verilator lint_on UNUSEDSIGNAL */
    vta_sram #(
        .WIDTH(UOP_ELEM_BITS),
        .DEPTH(UOP_DEPTH),
        .BANKS(K_UOP)
    ) u_uop_buf (
        .clk(clk),
        .wr_en(pad_uop || uop_rx_en),
        .wr_addr(uop_waddr[LOG_UOP_DEPTH-1:0]),
        .wr_mask(pad_uop ? UOP_LANE0 : uop_rx_mask),
        .wr_data(pad_uop ? {(K_UOP * UOP_ELEM_BITS) {1'b0}} : uop_rx_data),
        .rd_en(uop_rd_en),
        .rd_addr(uop_rd_addr),
        .rd_data(uop_rd_data)
    );

    // ---- acc buffer: LOAD ACC/ACC8 (padding or data), GEMM, ALU; one source at a time
    localparam [K_ACC-1:0] ACC_LANE0 = 1;
    wire pad_acc = pad_wr_en && cur_type != T_UOP;
    // Sources narrower than the K_ACC-lane port use its low lanes.
    wire [K_ACC*ACC_ELEM_BITS-1:0] g_wide;
    wire [K_ACC*ACC_ELEM_BITS-1:0] a_wide;
    wire [K_ACC*ACC_ELEM_BITS-1:0] ld_wide;
    wire [K_ACC-1:0] ld_mask;
    wire [K_OUT*OUT_ELEM_BITS-1:0] out_wide;
    wire [OUT_ELEM_BITS-1:0] cmp_out = g_wr_en ? g_wr_out : a_wr_out;
    generate
        if (K_ACC > 1) begin : g_acc_lanes
            assign g_wide = {{((K_ACC - 1) * ACC_ELEM_BITS) {1'b0}}, g_wr_acc};
            assign a_wide = {{((K_ACC - 1) * ACC_ELEM_BITS) {1'b0}}, a_wr_acc};
        end else begin : g_acc_lane
            assign g_wide = g_wr_acc;
            assign a_wide = a_wr_acc;
        end
        if (K_ACC > KA) begin : g_ld_lanes
            assign ld_wide = {{((K_ACC - KA) * ACC_ELEM_BITS) {1'b0}}, acc_rx_data};
            assign ld_mask = {{(K_ACC - KA) {1'b0}}, acc_rx_mask};
        end else begin : g_ld_lane
            assign ld_wide = acc_rx_data;
            assign ld_mask = acc_rx_mask;
        end
        if (K_OUT > 1) begin : g_out_lanes
            assign out_wide = {{((K_OUT - 1) * OUT_ELEM_BITS) {1'b0}}, cmp_out};
        end else begin : g_out_lane
            assign out_wide = cmp_out;
        end
    endgenerate

    /* verilator lint_off UNUSEDSIGNAL */  // buffers use the low bits of SADDR_W
    wire [SADDR_W-1:0] acc_pad_addr = pad_wr_addr;
    wire [SADDR_W-1:0] acc_ld_addr = acc_rx_addr;
    wire [SADDR_W-1:0] acc8_ld_addr = acc8_rx_addr;
    /* verilator lint_on UNUSEDSIGNAL */
    reg acc_wr_en;
    reg [AW-1:0] acc_waddr;
    reg [K_ACC-1:0] acc_wmask;
    reg [K_ACC*ACC_ELEM_BITS-1:0] acc_wdata;
    always @(*) begin
        acc_wr_en = 1'b1;
        acc_waddr = {AW{1'b0}};
        acc_wmask = ACC_LANE0;
        acc_wdata = {(K_ACC * ACC_ELEM_BITS) {1'b0}};
        if (pad_acc) begin
            acc_waddr = acc_pad_addr[AW-1:0];
        end else if (acc_rx_en) begin
            acc_waddr = acc_ld_addr[AW-1:0];
            acc_wmask = ld_mask;
            acc_wdata = ld_wide;
        end else if (acc8_rx_en) begin
            acc_waddr = acc8_ld_addr[AW-1:0];
            acc_wmask = acc8_rx_mask;
            acc_wdata = acc8_wide;
        end else if (g_wr_en) begin
            acc_waddr = g_wr_addr;
            acc_wdata = g_wide;
        end else if (a_wr_en) begin
            acc_waddr = a_wr_addr;
            acc_wdata = a_wide;
        end else begin
            acc_wr_en = 1'b0;
        end
    end
    /* verilator lint_off UNUSEDSIGNAL */  // GEMM/ALU read one entry of the K_ACC-lane port
    wire [K_ACC*ACC_ELEM_BITS-1:0] acc_rd_data;
    /* verilator lint_on UNUSEDSIGNAL */
    vta_sram #(
        .WIDTH(ACC_ELEM_BITS),
        .DEPTH(ACC_DEPTH),
        .BANKS(K_ACC)
    ) u_acc_buf (
        .clk(clk),
        .wr_en(acc_wr_en),
        .wr_addr(acc_waddr),
        .wr_mask(acc_wmask),
        .wr_data(acc_wdata),
        .rd_en(g_acc_rd_en || a_acc_rd_en),
        .rd_addr(cur_alu ? a_acc_rd_addr : g_acc_rd_addr),
        .rd_data(acc_rd_data)
    );
    assign acc_q = acc_rd_data[ACC_ELEM_BITS-1:0];

    // ---- out buffer write: every GEMM/ALU acc write (LOG_OUT_DEPTH = LOG_ACC_DEPTH)
    localparam [K_OUT-1:0] OUT_LANE0 = 1;
    assign out_wr_en = g_wr_en || a_wr_en;
    assign out_wr_addr = g_wr_en ? g_wr_addr : a_wr_addr;
    assign out_wr_mask = OUT_LANE0;
    assign out_wr_data = out_wide;

    // ---- events (vta_stats): the strobes of the cores and buffer ports above
    assign ev_gemm_uop = seq_valid && !cur_alu;
    assign ev_gemm_reset = cur_reset;
    assign ev_alu_uop = seq_valid && cur_alu;
    assign ev_alu_op = cur_aop;
    assign ev_alu_imm = cur_use_imm;
    assign ev_uop_rd = uop_rd_en;
    assign ev_acc_rd = g_acc_rd_en || a_acc_rd_en;
    assign ev_uop_wr_mask = (pad_uop || uop_rx_en) ? (pad_uop ? UOP_LANE0 : uop_rx_mask) :
                                                    {K_UOP{1'b0}};
    assign ev_acc_wr_mask = acc_wr_en ? acc_wmask : {K_ACC{1'b0}};
    assign ev_load_type = cur_type;

endmodule
`default_nettype wire
