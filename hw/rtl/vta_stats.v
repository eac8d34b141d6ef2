`default_nettype none
// Statistics of a run, counted from the accelerator's own signals.
//
// Cycles (docs/timing.md section 6): for each of fetch, load, compute and store, how many
// cycles fell in each category (busy, waiting on a token or queue, waiting on memory, idle).
// Every cycle of the run counts once per module, the FINISH cycle included, so each module's
// four counters sum to the run's cycle count.
//
// Events (docs/energy.md, the events isa.energy.count_events counts): micro-ops executed by the
// GEMM core (reset or not) and by the ALU (per opcode and operand kind), entries read and
// written at each buffer's ports, and DRAM bytes per requester and memory type, taken from each
// transfer's descriptor in its grant cycle. Event counters run from `start` on, also after
// FINISH, so the instructions still under way then (a STORE's last beats) count; the testbench
// reads them once the accelerator is quiescent. They are EV_W bits wide: a whole network's
// DRAM bytes and MACs fit. The counters only observe: no datapath or control signal depends
// on them, so timing is unchanged.
module vta_stats (
    clk,
    rst,
    // run control
    start,
    running,
    // category of this cycle: {store, compute, load, fetch}, CAT_* each
    category,
    // micro-ops entering the GEMM core and the ALU in this cycle
    gemm_uop,
    gemm_reset,
    alu_uop,
    alu_op,
    alu_imm,
    // buffer reads in this cycle: one entry each, the store's entries counted by it
    uop_rd,
    inp_rd,
    wgt_rd,
    acc_rd,
    out_rd_entries,
    // buffer writes in this cycle: the written lanes (zero when not writing)
    uop_wr_mask,
    inp_wr_mask,
    wgt_wr_mask,
    acc_wr_mask,
    out_wr_mask,
    // DRAM port: the grants but fetch's, the descriptor, and the memory type of the load and compute requests
    grant,
    mem_req_valid,
    mem_req_rows,
    mem_req_row_bytes,
    load_wgt,
    compute_type,
    // counters: module m, category c at [(4 * m + c) * CNT_W +: CNT_W]
    counts,
    // event counters: the one event_sel names (EV_* below), through a small read port
    event_sel,
    event_value
);
/* verilator lint_off UNUSEDPARAM */  // the headers declare every constant; a module uses some
`include "vta_params.vh"
`include "vta_derived.vh"
/* verilator lint_on UNUSEDPARAM */

    localparam integer N = 16;  // 4 modules x 4 categories
    localparam [CNT_W-1:0] CNT_ONE = 1;
    // Event counters, in the order hw.coverify.EVENTS reads them.
    localparam integer N_ALU = 1 << ALU_ALU_OPCODE_W;  // every opcode value, listed or not
    localparam integer EV_GEMM = 0;  // non-reset GEMM micro-ops
    localparam integer EV_RESET = 1;  // reset GEMM micro-ops
    localparam integer EV_ALU = 2;  // ALU micro-ops of opcode a: EV_ALU + 2a (imm), + 2a + 1 (acc)
    localparam integer EV_RD = EV_ALU + 2 * N_ALU;  // entries read: uop, inp, wgt, acc, out
    localparam integer EV_WR = EV_RD + 5;  // entries written: uop, inp, wgt, acc, out
    localparam integer EV_DRAM = EV_WR + 5;  // DRAM bytes: insn, uop, wgt, inp, acc, acc8, out
    localparam integer N_EV = EV_DRAM + 7;  // = N_EVENTS
    localparam [EV_SEL_W-1:0] SEL_END = N_EV[EV_SEL_W-1:0];
    localparam integer BYTES_W = ROWS_W + ROWB_W;
    localparam [EV_W-1:0] EV_ONE = 1;

    input wire clk;
    input wire rst;  // active-high, synchronous

    input wire start;  // clears the counters
    input wire running;  // counts this cycle
    input wire [7:0] category;

    input wire gemm_uop;
    input wire gemm_reset;  // the GEMM micro-op is a reset one
    input wire alu_uop;
    input wire [ALU_ALU_OPCODE_W-1:0] alu_op;
    input wire alu_imm;

    input wire uop_rd;
    input wire inp_rd;
    input wire wgt_rd;
    input wire acc_rd;
    input wire [ENT_W-1:0] out_rd_entries;

    input wire [K_UOP-1:0] uop_wr_mask;
    input wire [K_INP-1:0] inp_wr_mask;
    input wire [K_WGT-1:0] wgt_wr_mask;
    input wire [K_ACC-1:0] acc_wr_mask;
    input wire [K_OUT-1:0] out_wr_mask;

    input wire [2:0] grant;  // {store, compute, load}; fetch's when none of them
    input wire mem_req_valid;
    input wire [ROWS_W-1:0] mem_req_rows;
    input wire [ROWB_W-1:0] mem_req_row_bytes;
    input wire load_wgt;  // load's transfer fills wgt (else inp)
    input wire [1:0] compute_type;  // compute's transfer fills uop (0), acc (1) or acc8 (2)

    output wire [N*CNT_W-1:0] counts;
    input wire [EV_SEL_W-1:0] event_sel;
    output wire [EV_W-1:0] event_value;

    // ---- cycles per module and category
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

    // ---- events: what each counter adds in this cycle
    // Written lanes per buffer.
    reg [ENT_W-1:0] n_uop_wr;
    reg [ENT_W-1:0] n_inp_wr;
    reg [ENT_W-1:0] n_wgt_wr;
    reg [ENT_W-1:0] n_acc_wr;
    reg [ENT_W-1:0] n_out_wr;
    always @(*) begin : p_lanes
        integer j;  // its own loop variable: the block depends on the masks alone
        n_uop_wr = {ENT_W{1'b0}};
        n_inp_wr = {ENT_W{1'b0}};
        n_wgt_wr = {ENT_W{1'b0}};
        n_acc_wr = {ENT_W{1'b0}};
        n_out_wr = {ENT_W{1'b0}};
        for (j = 0; j < K_UOP; j = j + 1) begin
            n_uop_wr = n_uop_wr + {{(ENT_W - 1) {1'b0}}, uop_wr_mask[j]};
        end
        for (j = 0; j < K_INP; j = j + 1) begin
            n_inp_wr = n_inp_wr + {{(ENT_W - 1) {1'b0}}, inp_wr_mask[j]};
        end
        for (j = 0; j < K_WGT; j = j + 1) begin
            n_wgt_wr = n_wgt_wr + {{(ENT_W - 1) {1'b0}}, wgt_wr_mask[j]};
        end
        for (j = 0; j < K_ACC; j = j + 1) begin
            n_acc_wr = n_acc_wr + {{(ENT_W - 1) {1'b0}}, acc_wr_mask[j]};
        end
        for (j = 0; j < K_OUT; j = j + 1) begin
            n_out_wr = n_out_wr + {{(ENT_W - 1) {1'b0}}, out_wr_mask[j]};
        end
    end

    // Bytes of the transfer granted in this cycle, and the DRAM counter they go to.
    wire [BYTES_W-1:0] xfer_bytes = {{ROWB_W{1'b0}}, mem_req_rows} *
                                    {{ROWS_W{1'b0}}, mem_req_row_bytes};
    reg [2:0] kind;  // index into insn, uop, wgt, inp, acc, acc8, out
    always @(*) begin
        kind = 3'd0;  // fetch
        if (grant[0]) begin
            kind = load_wgt ? 3'd2 : 3'd3;
        end else if (grant[1]) begin
            kind = (compute_type == 2'd0) ? 3'd1 : ((compute_type == 2'd1) ? 3'd4 : 3'd5);
        end else if (grant[2]) begin
            kind = 3'd6;
        end
    end

    reg [EV_W-1:0] ev[0:N_EV-1];
    /* verilator lint_off UNUSEDSIGNAL */  // an index: the low bits address the counters
    wire [31:0] alu_slot = EV_ALU + {{(31 - ALU_ALU_OPCODE_W) {1'b0}}, alu_op, !alu_imm};
    /* verilator lint_on UNUSEDSIGNAL */
    always @(posedge clk) begin
        if (rst || start) begin
            for (i = 0; i < N_EV; i = i + 1) begin
                ev[i] <= {EV_W{1'b0}};
            end
        end else begin
            if (gemm_uop) begin
                if (gemm_reset) begin
                    ev[EV_RESET] <= ev[EV_RESET] + EV_ONE;
                end else begin
                    ev[EV_GEMM] <= ev[EV_GEMM] + EV_ONE;
                end
            end
            if (alu_uop) begin
                ev[alu_slot] <= ev[alu_slot] + EV_ONE;
            end
            if (uop_rd) begin
                ev[EV_RD+0] <= ev[EV_RD+0] + EV_ONE;
            end
            if (inp_rd) begin
                ev[EV_RD+1] <= ev[EV_RD+1] + EV_ONE;
            end
            if (wgt_rd) begin
                ev[EV_RD+2] <= ev[EV_RD+2] + EV_ONE;
            end
            if (acc_rd) begin
                ev[EV_RD+3] <= ev[EV_RD+3] + EV_ONE;
            end
            // (each add only when there is one: an idle counter costs a simulator nothing)
            if (out_rd_entries != {ENT_W{1'b0}}) begin
                ev[EV_RD+4] <= ev[EV_RD+4] + {{(EV_W - ENT_W) {1'b0}}, out_rd_entries};
            end
            if (n_uop_wr != {ENT_W{1'b0}}) begin
                ev[EV_WR+0] <= ev[EV_WR+0] + {{(EV_W - ENT_W) {1'b0}}, n_uop_wr};
            end
            if (n_inp_wr != {ENT_W{1'b0}}) begin
                ev[EV_WR+1] <= ev[EV_WR+1] + {{(EV_W - ENT_W) {1'b0}}, n_inp_wr};
            end
            if (n_wgt_wr != {ENT_W{1'b0}}) begin
                ev[EV_WR+2] <= ev[EV_WR+2] + {{(EV_W - ENT_W) {1'b0}}, n_wgt_wr};
            end
            if (n_acc_wr != {ENT_W{1'b0}}) begin
                ev[EV_WR+3] <= ev[EV_WR+3] + {{(EV_W - ENT_W) {1'b0}}, n_acc_wr};
            end
            if (n_out_wr != {ENT_W{1'b0}}) begin
                ev[EV_WR+4] <= ev[EV_WR+4] + {{(EV_W - ENT_W) {1'b0}}, n_out_wr};
            end
            if (mem_req_valid) begin
                ev[EV_DRAM+{29'd0, kind}] <= ev[EV_DRAM+{29'd0, kind}] +
                                             {{(EV_W - BYTES_W) {1'b0}}, xfer_bytes};
            end
        end
    end

    // One counter at a time: a port of every counter would be a vector that changes in
    // nearly every cycle, which costs an event-driven simulator more than all the counting.
    assign event_value = (event_sel < SEL_END) ? ev[event_sel] : {EV_W{1'b0}};

endmodule
`default_nettype wire
