`default_nettype none
// The load module: executes LOAD INP and LOAD WGT from its command queue, in order.
// Dependency queues: it pops compute->load (pop_next_dep) and pushes load->compute
// (push_next_dep); it has no prev queues, so the prev flags are ignored.
module vta_load (
    clk,
    rst,
    enable,
    // command queue
    cmd_valid,
    cmd_data,
    cmd_pop,
    // dependency queues
    tok_next,
    pop_next,
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
    // inp buffer write port
    inp_wr_en,
    inp_wr_addr,
    inp_wr_mask,
    inp_wr_data,
    // wgt buffer write port
    wgt_wr_en,
    wgt_wr_addr,
    wgt_wr_mask,
    wgt_wr_data,
    // observation
    state,
    category,
    waiting,
    issued,
    dram_wgt
);
/* verilator lint_off UNUSEDPARAM */  // the headers declare every constant; a module uses some
`include "vta_params.vh"
`include "vta_derived.vh"
/* verilator lint_on UNUSEDPARAM */

    localparam integer LEW = $clog2(LOG_MAX_EB + 1);
    localparam [LEW-1:0] LEB_INP = LOG_INP_EB[LEW-1:0];
    localparam [LEW-1:0] LEB_WGT = LOG_WGT_EB[LEW-1:0];
    localparam [MEM_MEMORY_TYPE_W-1:0] MT_WGT = MEM_WGT[MEM_MEMORY_TYPE_W-1:0];
    localparam [CNT_W-1:0] CNT_ONE = 1;

    input wire clk;
    input wire rst;  // active-high, synchronous
    input wire enable;  // issuing allowed (low after the run's FINISH)

    input wire cmd_valid;
    input wire [INSN_BITS-1:0] cmd_data;
    output wire cmd_pop;

    input wire tok_next;  // compute->load holds a token
    output wire pop_next;
    input wire room_next;  // load->compute has room
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

    output wire inp_wr_en;
    output wire [LOG_INP_DEPTH-1:0] inp_wr_addr;
    output wire [K_INP-1:0] inp_wr_mask;
    output wire [K_INP*INP_ELEM_BITS-1:0] inp_wr_data;

    output wire wgt_wr_en;
    output wire [LOG_WGT_DEPTH-1:0] wgt_wr_addr;
    output wire [K_WGT-1:0] wgt_wr_mask;
    output wire [K_WGT*WGT_ELEM_BITS-1:0] wgt_wr_data;

    output wire [1:0] state;
    output wire [1:0] category;  // statistics category of this cycle (CAT_*)
    output wire waiting;  // asking for the DRAM port
    output wire [CNT_W-1:0] issued;  // instructions issued so far
    output wire dram_wgt;  // the current LOAD fills wgt (else inp): its DRAM bytes' type

    // ---- decode the head
    wire [MEM_MEMORY_TYPE_W-1:0] h_mtype = cmd_data[MEM_MEMORY_TYPE_LSB+:MEM_MEMORY_TYPE_W];
    wire h_wgt = (h_mtype == MT_WGT);
    wire h_zero;
    wire issue;
    wire exec_done;
    wire [SADDR_W-1:0] row0;
    wire [SADDR_W-1:0] pitch;

    /* verilator lint_off PINCONNECTEMPTY */  // load has no prev queues
    vta_issue_ctrl u_ctrl (
        .clk(clk),
        .rst(rst),
        .enable(enable),
        .head_valid(cmd_valid),
        .head_pop_prev(1'b0),
        .head_pop_next(cmd_data[MEM_POP_NEXT_DEP_LSB]),
        .head_push_prev(1'b0),
        .head_push_next(cmd_data[MEM_PUSH_NEXT_DEP_LSB]),
        .head_zero(h_zero),
        .tok_prev(1'b0),
        .tok_next(tok_next),
        .room_prev(1'b0),
        .room_next(room_next),
        .exec_done(exec_done),
        .mem_wait(req && !grant),
        .issue(issue),
        .pop_prev(),
        .pop_next(pop_next),
        .push_prev(),
        .push_next(push_next),
        .state(state),
        .category(category)
    );
    /* verilator lint_on PINCONNECTEMPTY */
    assign cmd_pop = issue;

    // ---- padding, port request, transfer
    wire pad_wr_en;
    wire [SADDR_W-1:0] pad_wr_addr;
    wire start = issue && !h_zero;

    vta_dma_load u_dma (
        .clk(clk),
        .rst(rst),
        .start(start),
        .sram_base(cmd_data[MEM_SRAM_BASE_LSB+:MEM_SRAM_BASE_W]),
        .dram_base(cmd_data[MEM_DRAM_BASE_LSB+:MEM_DRAM_BASE_W]),
        .y_size(cmd_data[MEM_Y_SIZE_LSB+:MEM_Y_SIZE_W]),
        .x_size(cmd_data[MEM_X_SIZE_LSB+:MEM_X_SIZE_W]),
        .x_stride(cmd_data[MEM_X_STRIDE_LSB+:MEM_X_STRIDE_W]),
        .y_pad_0(cmd_data[MEM_Y_PAD_0_LSB+:MEM_Y_PAD_0_W]),
        .y_pad_1(cmd_data[MEM_Y_PAD_1_LSB+:MEM_Y_PAD_1_W]),
        .x_pad_0(cmd_data[MEM_X_PAD_0_LSB+:MEM_X_PAD_0_W]),
        .x_pad_1(cmd_data[MEM_X_PAD_1_LSB+:MEM_X_PAD_1_W]),
        .log_eb(h_wgt ? LEB_WGT : LEB_INP),
        .zero(h_zero),
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
        .done(exec_done),
        .waiting(waiting)
    );

    // ---- which buffer the current instruction fills
    reg cur_wgt;
    reg [CNT_W-1:0] issued_r;
    always @(posedge clk) begin
        if (rst) begin
            cur_wgt <= 1'b0;
            issued_r <= {CNT_W{1'b0}};
        end else if (issue) begin
            cur_wgt <= h_wgt;
            issued_r <= issued_r + CNT_ONE;
        end
    end
    assign issued = issued_r;
    assign dram_wgt = cur_wgt;

    // ---- beats to entries
    wire inp_rx_en;
    wire [SADDR_W-1:0] inp_rx_addr;
    wire wgt_rx_en;
    wire [SADDR_W-1:0] wgt_rx_addr;
    wire [K_INP-1:0] inp_rx_mask;
    wire [K_WGT-1:0] wgt_rx_mask;
    wire [K_INP*INP_ELEM_BITS-1:0] inp_rx_data;
    wire [K_WGT*WGT_ELEM_BITS-1:0] wgt_rx_data;

    vta_dma_rx #(
        .EB(INP_ELEM_BYTES)
    ) u_rx_inp (
        .clk(clk),
        .rst(rst),
        .start(start),
        .row0(row0),
        .pitch(pitch),
        .x_size(cmd_data[MEM_X_SIZE_LSB+:MEM_X_SIZE_W]),
        .beat(beat && !cur_wgt),
        .data(rdata),
        .wr_en(inp_rx_en),
        .wr_addr(inp_rx_addr),
        .wr_mask(inp_rx_mask),
        .wr_data(inp_rx_data)
    );

    vta_dma_rx #(
        .EB(WGT_ELEM_BYTES)
    ) u_rx_wgt (
        .clk(clk),
        .rst(rst),
        .start(start),
        .row0(row0),
        .pitch(pitch),
        .x_size(cmd_data[MEM_X_SIZE_LSB+:MEM_X_SIZE_W]),
        .beat(beat && cur_wgt),
        .data(rdata),
        .wr_en(wgt_rx_en),
        .wr_addr(wgt_rx_addr),
        .wr_mask(wgt_rx_mask),
        .wr_data(wgt_rx_data)
    );

    // ---- buffer write ports: padding zeros (lane 0) or received entries; never both
    localparam [K_INP-1:0] INP_LANE0 = 1;
    localparam [K_WGT-1:0] WGT_LANE0 = 1;
    wire pad_inp = pad_wr_en && !cur_wgt;
    wire pad_wgt = pad_wr_en && cur_wgt;
    /* verilator lint_off UNUSEDSIGNAL */  // SRAM addresses use the low bits of SADDR_W
    wire [SADDR_W-1:0] inp_addr_full = pad_inp ? pad_wr_addr : inp_rx_addr;
    wire [SADDR_W-1:0] wgt_addr_full = pad_wgt ? pad_wr_addr : wgt_rx_addr;
    /* verilator lint_on UNUSEDSIGNAL */
    assign inp_wr_en = pad_inp || inp_rx_en;
    assign inp_wr_addr = inp_addr_full[LOG_INP_DEPTH-1:0];
    assign inp_wr_mask = pad_inp ? INP_LANE0 : inp_rx_mask;
    assign inp_wr_data = pad_inp ? {(K_INP * INP_ELEM_BITS) {1'b0}} : inp_rx_data;
    assign wgt_wr_en = pad_wgt || wgt_rx_en;
    assign wgt_wr_addr = wgt_addr_full[LOG_WGT_DEPTH-1:0];
    assign wgt_wr_mask = pad_wgt ? WGT_LANE0 : wgt_rx_mask;
    assign wgt_wr_data = pad_wgt ? {(K_WGT * WGT_ELEM_BITS) {1'b0}} : wgt_rx_data;

endmodule
`default_nettype wire
