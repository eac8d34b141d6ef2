`default_nettype none
// The accelerator: fetch, three command queues, load, compute and store, four dependency-token
// queues, the inp/wgt/out buffers (uop and acc live in compute), and one DRAM port.
//
// Run control: pulse `start` for one cycle with `insn_base` (byte address, 16-aligned) and
// `insn_count`; the next cycle is cycle 0 of the run (docs/timing.md section 1). `done` rises
// after the cycle in which compute issues FINISH, and `cycles` then holds that cycle's number
// plus one. `cycles` counts while `running`. After FINISH nothing new issues (fetch stops too),
// while instructions under way run to their end: `quiescent` rises when none is left, and
// every DRAM write the run started is then complete.
//
// Memory port: one 2-D transfer at a time. In its grant cycle the accelerator drives
// mem_req_valid with a descriptor: byte address of the first row, bytes per row, rows, bytes
// from one row start to the next, and read or write. The DRAM answers dram_latency cycles after
// the request cycle with one beat of BUS_BYTES per cycle, flagged by mem_beat (mem_last on the
// transfer's final beat); each row starts on a new beat, so a row of n bytes takes
// ceil(n / BUS_BYTES) beats and the last beat of a row carries only its remaining bytes. Reads
// deliver mem_rdata with each beat; writes take mem_wdata in each beat cycle. hw/README.md
// describes the protocol in full.
module vta_top (
    clk,
    rst,
    // run control
    start,
    insn_base,
    insn_count,
    running,
    done,
    cycles,
    quiescent,
    // memory port: request (one descriptor per transfer)
    mem_req_valid,
    mem_req_write,
    mem_req_addr,
    mem_req_row_bytes,
    mem_req_rows,
    mem_req_stride,
    // memory port: data beats
    mem_beat,
    mem_last,
    mem_rdata,
    mem_wdata,
    // observation (progress and stall diagnosis)
    dbg_dispatched,
    dbg_issued,
    dbg_states,
    dbg_waiting,
    dbg_tokens,
    dbg_cmd_counts,
    dbg_stats,
    dbg_event_sel,
    dbg_event
);
/* verilator lint_off UNUSEDPARAM */  // the headers declare every constant; a module uses some
`include "vta_params.vh"
`include "vta_derived.vh"
/* verilator lint_on UNUSEDPARAM */

    localparam [CNT_W-1:0] CNT_ONE = 1;
    localparam [ROWS_W-1:0] ONE_ROW = 1;

    input wire clk;
    input wire rst;  // active-high, synchronous

    input wire start;
    input wire [DADDR_W-1:0] insn_base;
    input wire [CNT_W-1:0] insn_count;
    output wire running;
    output wire done;
    output wire [CNT_W-1:0] cycles;
    output wire quiescent;  // no instruction under way and the DRAM port free

    output wire mem_req_valid;
    output wire mem_req_write;
    output wire [DADDR_W-1:0] mem_req_addr;
    output wire [ROWB_W-1:0] mem_req_row_bytes;
    output wire [ROWS_W-1:0] mem_req_rows;
    output wire [STRB_W-1:0] mem_req_stride;

    input wire mem_beat;
    input wire mem_last;
    input wire [BUS_BITS-1:0] mem_rdata;
    output wire [BUS_BITS-1:0] mem_wdata;

    output wire [CNT_W-1:0] dbg_dispatched;  // instructions fetch has dispatched
    output wire [3*CNT_W-1:0] dbg_issued;  // instructions issued by {store, compute, load}
    output wire [5:0] dbg_states;  // issue-controller state of {store, compute, load}
    output wire [3:0] dbg_waiting;  // asking for the port: {store, compute, load, fetch}
    output wire [4*DEPQ_CW-1:0] dbg_tokens;  // {s->c, c->s, c->l, l->c}
    output wire [3*CMDQ_CW-1:0] dbg_cmd_counts;  // {store, compute, load}
    output wire [16*CNT_W-1:0] dbg_stats;  // cycles per module and category (vta_stats)
    input wire [EV_SEL_W-1:0] dbg_event_sel;  // which event counter dbg_event shows
    output wire [EV_W-1:0] dbg_event;  // that counter (vta_stats)

    // ---- run control and cycle counter
    reg running_r;
    reg done_r;
    reg [CNT_W-1:0] cycles_r;
    wire finish;
    always @(posedge clk) begin
        if (rst) begin
            running_r <= 1'b0;
            done_r <= 1'b0;
            cycles_r <= {CNT_W{1'b0}};
        end else if (start) begin
            running_r <= 1'b1;
            done_r <= 1'b0;
            cycles_r <= {CNT_W{1'b0}};
        end else if (running_r) begin
            cycles_r <= cycles_r + CNT_ONE;
            if (finish) begin
                running_r <= 1'b0;
                done_r <= 1'b1;
            end
        end
    end
    assign running = running_r;
    assign done = done_r;
    assign cycles = cycles_r;

    // ---- fetch and command queues
    wire [INSN_BITS-1:0] f_insn;
    wire f_push_ld;
    wire f_push_cp;
    wire f_push_st;
    wire ldq_not_full;
    wire cpq_not_full;
    wire stq_not_full;
    wire f_req;
    wire [DADDR_W-1:0] f_addr;
    wire [ROWB_W-1:0] f_row_bytes;
    wire [3:0] grant;
    wire [3:0] beat;
    wire [3:0] last;
    wire [3:0] xdone;
    wire f_busy;
    wire [7:0] cat;  // statistics category of this cycle: {store, compute, load, fetch}

    vta_fetch u_fetch (
        .clk(clk),
        .rst(rst),
        .enable(running_r),
        .start(start),
        .insn_base(insn_base),
        .insn_count(insn_count),
        .req(f_req),
        .req_addr(f_addr),
        .req_row_bytes(f_row_bytes),
        .grant(grant[0]),
        .beat(beat[0]),
        .last(last[0]),
        .rdata(mem_rdata),
        .insn(f_insn),
        .push_load(f_push_ld),
        .push_compute(f_push_cp),
        .push_store(f_push_st),
        .room_load(ldq_not_full),
        .room_compute(cpq_not_full),
        .room_store(stq_not_full),
        .dispatched(dbg_dispatched),
        .waiting(dbg_waiting[0]),
        .busy(f_busy),
        .category(cat[1:0])
    );

    wire ldq_valid;
    wire cpq_valid;
    wire stq_valid;
    wire [INSN_BITS-1:0] ldq_head;
    wire [INSN_BITS-1:0] cpq_head;
    wire [INSN_BITS-1:0] stq_head;
    wire ldq_pop;
    wire cpq_pop;
    wire stq_pop;

    vta_cmd_queue u_load_q (
        .clk(clk),
        .rst(rst),
        .push(f_push_ld),
        .push_data(f_insn),
        .not_full(ldq_not_full),
        .pop(ldq_pop),
        .head(ldq_head),
        .not_empty(ldq_valid),
        .count(dbg_cmd_counts[0*CMDQ_CW+:CMDQ_CW])
    );
    vta_cmd_queue u_compute_q (
        .clk(clk),
        .rst(rst),
        .push(f_push_cp),
        .push_data(f_insn),
        .not_full(cpq_not_full),
        .pop(cpq_pop),
        .head(cpq_head),
        .not_empty(cpq_valid),
        .count(dbg_cmd_counts[1*CMDQ_CW+:CMDQ_CW])
    );
    vta_cmd_queue u_store_q (
        .clk(clk),
        .rst(rst),
        .push(f_push_st),
        .push_data(f_insn),
        .not_full(stq_not_full),
        .pop(stq_pop),
        .head(stq_head),
        .not_empty(stq_valid),
        .count(dbg_cmd_counts[2*CMDQ_CW+:CMDQ_CW])
    );

    // ---- dependency queues
    wire l2c_push;
    wire l2c_pop;
    wire l2c_not_full;
    wire l2c_not_empty;
    wire c2l_push;
    wire c2l_pop;
    wire c2l_not_full;
    wire c2l_not_empty;
    wire c2s_push;
    wire c2s_pop;
    wire c2s_not_full;
    wire c2s_not_empty;
    wire s2c_push;
    wire s2c_pop;
    wire s2c_not_full;
    wire s2c_not_empty;

    vta_dep_queue u_l2c (
        .clk(clk),
        .rst(rst),
        .push(l2c_push),
        .not_full(l2c_not_full),
        .pop(l2c_pop),
        .not_empty(l2c_not_empty),
        .count(dbg_tokens[0*DEPQ_CW+:DEPQ_CW])
    );
    vta_dep_queue u_c2l (
        .clk(clk),
        .rst(rst),
        .push(c2l_push),
        .not_full(c2l_not_full),
        .pop(c2l_pop),
        .not_empty(c2l_not_empty),
        .count(dbg_tokens[1*DEPQ_CW+:DEPQ_CW])
    );
    vta_dep_queue u_c2s (
        .clk(clk),
        .rst(rst),
        .push(c2s_push),
        .not_full(c2s_not_full),
        .pop(c2s_pop),
        .not_empty(c2s_not_empty),
        .count(dbg_tokens[2*DEPQ_CW+:DEPQ_CW])
    );
    vta_dep_queue u_s2c (
        .clk(clk),
        .rst(rst),
        .push(s2c_push),
        .not_full(s2c_not_full),
        .pop(s2c_pop),
        .not_empty(s2c_not_empty),
        .count(dbg_tokens[3*DEPQ_CW+:DEPQ_CW])
    );

    // ---- buffers shared between modules
    wire inp_wr_en;
    wire [LOG_INP_DEPTH-1:0] inp_wr_addr;
    wire [K_INP-1:0] inp_wr_mask;
    wire [K_INP*INP_ELEM_BITS-1:0] inp_wr_data;
    wire inp_rd_en;
    wire [LOG_INP_DEPTH-1:0] inp_rd_addr;
    wire [K_INP*INP_ELEM_BITS-1:0] inp_rd_data;
    wire wgt_wr_en;
    wire [LOG_WGT_DEPTH-1:0] wgt_wr_addr;
    wire [K_WGT-1:0] wgt_wr_mask;
    wire [K_WGT*WGT_ELEM_BITS-1:0] wgt_wr_data;
    wire wgt_rd_en;
    wire [LOG_WGT_DEPTH-1:0] wgt_rd_addr;
    wire [K_WGT*WGT_ELEM_BITS-1:0] wgt_rd_data;
    wire out_wr_en;
    wire [LOG_OUT_DEPTH-1:0] out_wr_addr;
    wire [K_OUT-1:0] out_wr_mask;
    wire [K_OUT*OUT_ELEM_BITS-1:0] out_wr_data;
    wire out_rd_en;
    wire [LOG_OUT_DEPTH-1:0] out_rd_addr;
    wire [K_OUT*OUT_ELEM_BITS-1:0] out_rd_data;

    vta_sram #(
        .WIDTH(INP_ELEM_BITS),
        .DEPTH(INP_DEPTH),
        .BANKS(K_INP)
    ) u_inp_buf (
        .clk(clk),
        .wr_en(inp_wr_en),
        .wr_addr(inp_wr_addr),
        .wr_mask(inp_wr_mask),
        .wr_data(inp_wr_data),
        .rd_en(inp_rd_en),
        .rd_addr(inp_rd_addr),
        .rd_data(inp_rd_data)
    );
    vta_sram #(
        .WIDTH(WGT_ELEM_BITS),
        .DEPTH(WGT_DEPTH),
        .BANKS(K_WGT)
    ) u_wgt_buf (
        .clk(clk),
        .wr_en(wgt_wr_en),
        .wr_addr(wgt_wr_addr),
        .wr_mask(wgt_wr_mask),
        .wr_data(wgt_wr_data),
        .rd_en(wgt_rd_en),
        .rd_addr(wgt_rd_addr),
        .rd_data(wgt_rd_data)
    );
    vta_sram #(
        .WIDTH(OUT_ELEM_BITS),
        .DEPTH(OUT_DEPTH),
        .BANKS(K_OUT)
    ) u_out_buf (
        .clk(clk),
        .wr_en(out_wr_en),
        .wr_addr(out_wr_addr),
        .wr_mask(out_wr_mask),
        .wr_data(out_wr_data),
        .rd_en(out_rd_en),
        .rd_addr(out_rd_addr),
        .rd_data(out_rd_data)
    );

    // ---- load, compute, store
    wire l_req;
    wire [DADDR_W-1:0] l_addr;
    wire [ROWB_W-1:0] l_row_bytes;
    wire [ROWS_W-1:0] l_rows;
    wire [STRB_W-1:0] l_stride;
    wire c_req;
    wire [DADDR_W-1:0] c_addr;
    wire [ROWB_W-1:0] c_row_bytes;
    wire [ROWS_W-1:0] c_rows;
    wire [STRB_W-1:0] c_stride;
    wire s_req;
    wire [DADDR_W-1:0] s_addr;
    wire [ROWB_W-1:0] s_row_bytes;
    wire [ROWS_W-1:0] s_rows;
    wire [STRB_W-1:0] s_stride;
    wire s_xfer_done;
    // events of this cycle, for vta_stats
    wire ld_wgt;
    wire ev_gemm_uop;
    wire ev_gemm_reset;
    wire ev_alu_uop;
    wire [ALU_ALU_OPCODE_W-1:0] ev_alu_op;
    wire ev_alu_imm;
    wire ev_uop_rd;
    wire ev_acc_rd;
    wire [K_UOP-1:0] ev_uop_wr_mask;
    wire [K_ACC-1:0] ev_acc_wr_mask;
    wire [1:0] ev_load_type;
    wire [ENT_W-1:0] ev_out_rd;

    vta_load u_load (
        .clk(clk),
        .rst(rst),
        .enable(running_r),
        .cmd_valid(ldq_valid),
        .cmd_data(ldq_head),
        .cmd_pop(ldq_pop),
        .tok_next(c2l_not_empty),
        .pop_next(c2l_pop),
        .room_next(l2c_not_full),
        .push_next(l2c_push),
        .req(l_req),
        .req_addr(l_addr),
        .req_row_bytes(l_row_bytes),
        .req_rows(l_rows),
        .req_stride(l_stride),
        .grant(grant[1]),
        .beat(beat[1]),
        .last(last[1]),
        .rdata(mem_rdata),
        .inp_wr_en(inp_wr_en),
        .inp_wr_addr(inp_wr_addr),
        .inp_wr_mask(inp_wr_mask),
        .inp_wr_data(inp_wr_data),
        .wgt_wr_en(wgt_wr_en),
        .wgt_wr_addr(wgt_wr_addr),
        .wgt_wr_mask(wgt_wr_mask),
        .wgt_wr_data(wgt_wr_data),
        .state(dbg_states[1:0]),
        .category(cat[3:2]),
        .waiting(dbg_waiting[1]),
        .issued(dbg_issued[0*CNT_W+:CNT_W]),
        .dram_wgt(ld_wgt)
    );

    vta_compute u_compute (
        .clk(clk),
        .rst(rst),
        .enable(running_r),
        .cmd_valid(cpq_valid),
        .cmd_data(cpq_head),
        .cmd_pop(cpq_pop),
        .tok_prev(l2c_not_empty),
        .pop_prev(l2c_pop),
        .tok_next(s2c_not_empty),
        .pop_next(s2c_pop),
        .room_prev(c2l_not_full),
        .push_prev(c2l_push),
        .room_next(c2s_not_full),
        .push_next(c2s_push),
        .req(c_req),
        .req_addr(c_addr),
        .req_row_bytes(c_row_bytes),
        .req_rows(c_rows),
        .req_stride(c_stride),
        .grant(grant[2]),
        .beat(beat[2]),
        .last(last[2]),
        .rdata(mem_rdata),
        .inp_rd_en(inp_rd_en),
        .inp_rd_addr(inp_rd_addr),
        .inp_rd_data(inp_rd_data),
        .wgt_rd_en(wgt_rd_en),
        .wgt_rd_addr(wgt_rd_addr),
        .wgt_rd_data(wgt_rd_data),
        .out_wr_en(out_wr_en),
        .out_wr_addr(out_wr_addr),
        .out_wr_mask(out_wr_mask),
        .out_wr_data(out_wr_data),
        .finish(finish),
        .state(dbg_states[3:2]),
        .category(cat[5:4]),
        .waiting(dbg_waiting[2]),
        .issued(dbg_issued[1*CNT_W+:CNT_W]),
        .ev_gemm_uop(ev_gemm_uop),
        .ev_gemm_reset(ev_gemm_reset),
        .ev_alu_uop(ev_alu_uop),
        .ev_alu_op(ev_alu_op),
        .ev_alu_imm(ev_alu_imm),
        .ev_uop_rd(ev_uop_rd),
        .ev_acc_rd(ev_acc_rd),
        .ev_uop_wr_mask(ev_uop_wr_mask),
        .ev_acc_wr_mask(ev_acc_wr_mask),
        .ev_load_type(ev_load_type)
    );

    vta_store u_store (
        .clk(clk),
        .rst(rst),
        .enable(running_r),
        .cmd_valid(stq_valid),
        .cmd_data(stq_head),
        .cmd_pop(stq_pop),
        .tok_prev(c2s_not_empty),
        .pop_prev(c2s_pop),
        .room_prev(s2c_not_full),
        .push_prev(s2c_push),
        .req(s_req),
        .req_addr(s_addr),
        .req_row_bytes(s_row_bytes),
        .req_rows(s_rows),
        .req_stride(s_stride),
        .grant(grant[3]),
        .beat(beat[3]),
        .last(last[3]),
        .wdata(mem_wdata),
        .xfer_done(s_xfer_done),
        .out_rd_en(out_rd_en),
        .out_rd_addr(out_rd_addr),
        .out_rd_data(out_rd_data),
        .state(dbg_states[5:4]),
        .category(cat[7:6]),
        .waiting(dbg_waiting[3]),
        .issued(dbg_issued[2*CNT_W+:CNT_W]),
        .out_rd_entries(ev_out_rd)
    );

    // ---- the DRAM port
    assign xdone[0] = beat[0] && last[0];
    assign xdone[1] = beat[1] && last[1];
    assign xdone[2] = beat[2] && last[2];
    assign xdone[3] = s_xfer_done;
    wire port_busy;

    vta_port_arbiter u_port (
        .clk(clk),
        .rst(rst),
        .req({s_req, c_req, l_req, f_req}),
        .req_addr({s_addr, c_addr, l_addr, f_addr}),
        .req_row_bytes({s_row_bytes, c_row_bytes, l_row_bytes, f_row_bytes}),
        .req_rows({s_rows, c_rows, l_rows, ONE_ROW}),
        .req_stride({s_stride, c_stride, l_stride, {STRB_W{1'b0}}}),
        .done(xdone),
        .grant(grant),
        .beat(beat),
        .last(last),
        .mem_req_valid(mem_req_valid),
        .mem_req_write(mem_req_write),
        .mem_req_addr(mem_req_addr),
        .mem_req_row_bytes(mem_req_row_bytes),
        .mem_req_rows(mem_req_rows),
        .mem_req_stride(mem_req_stride),
        .mem_beat(mem_beat),
        .mem_last(mem_last),
        .busy(port_busy)
    );

    vta_stats u_stats (
        .clk(clk),
        .rst(rst),
        .start(start),
        .running(running_r),
        .category(cat),
        .gemm_uop(ev_gemm_uop),
        .gemm_reset(ev_gemm_reset),
        .alu_uop(ev_alu_uop),
        .alu_op(ev_alu_op),
        .alu_imm(ev_alu_imm),
        .uop_rd(ev_uop_rd),
        .inp_rd(inp_rd_en),
        .wgt_rd(wgt_rd_en),
        .acc_rd(ev_acc_rd),
        .out_rd_entries(ev_out_rd),
        .uop_wr_mask(ev_uop_wr_mask),
        .inp_wr_mask(inp_wr_en ? inp_wr_mask : {K_INP{1'b0}}),
        .wgt_wr_mask(wgt_wr_en ? wgt_wr_mask : {K_WGT{1'b0}}),
        .acc_wr_mask(ev_acc_wr_mask),
        .out_wr_mask(out_wr_en ? out_wr_mask : {K_OUT{1'b0}}),
        .grant(grant[3:1]),
        .mem_req_valid(mem_req_valid),
        .mem_req_rows(mem_req_rows),
        .mem_req_row_bytes(mem_req_row_bytes),
        .load_wgt(ld_wgt),
        .compute_type(ev_load_type),
        .counts(dbg_stats),
        .event_sel(dbg_event_sel),
        .event_value(dbg_event)
    );

    assign quiescent = !port_busy && (dbg_states[1:0] != ST_EXEC) &&
                       (dbg_states[3:2] != ST_EXEC) && (dbg_states[5:4] != ST_EXEC);

    /* verilator lint_off UNUSEDSIGNAL */  // kept for waveform inspection
    wire unused_status = f_busy;
    /* verilator lint_on UNUSEDSIGNAL */

endmodule
`default_nettype wire
