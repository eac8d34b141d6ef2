`default_nettype none
// The store module: executes STORE from its command queue, in order. Out-buffer entry
// sram_base + y * x_size + x goes to DRAM element dram_base + y * x_stride + x, one 2-D write
// transfer per instruction. It asks for the DRAM port in the cycle after issue; the DRAM takes
// one beat of write data per cycle from dram_latency cycles after the grant, each row starting
// on a new beat. The store keeps the next beat's entries in the out buffer's read register: it
// reads the first beat in the grant cycle and the next one in the cycle of each beat.
// A STORE with x_size > 0 and y_size = 0 moves no data but still holds the port for
// dram_latency cycles (docs/timing.md section 3: E = W + L + 0 beats).
// Dependency queues: pops compute->store (pop_prev_dep), pushes store->compute
// (push_prev_dep); it has no next queues, so the next flags are ignored.
module vta_store (
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
    room_prev,
    push_prev,
    // DRAM port requester
    req,
    req_addr,
    req_row_bytes,
    req_rows,
    req_stride,
    grant,
    beat,
    last,
    wdata,
    xfer_done,
    // out buffer read port
    out_rd_en,
    out_rd_addr,
    out_rd_data,
    // observation
    state,
    category,
    waiting,
    issued,
    // events of this cycle (vta_stats)
    out_rd_entries
);
/* verilator lint_off UNUSEDPARAM */  // the headers declare every constant; a module uses some
`include "vta_params.vh"
`include "vta_derived.vh"
/* verilator lint_on UNUSEDPARAM */

    localparam integer XW = MEM_X_SIZE_W;
    localparam integer CW = XW + 1;
    localparam integer K = K_OUT;  // entries per beat (elements no wider than the bus)
    localparam integer R = (OUT_ELEM_BYTES > BUS_BYTES) ? OUT_ELEM_BYTES / BUS_BYTES : 1;
    localparam integer PW = (R > 1) ? $clog2(R) : 1;
    localparam integer LW = (DRAM_LATENCY > 1) ? $clog2(DRAM_LATENCY) : 1;
    localparam [1:0] S_IDLE = 2'd0;
    localparam [1:0] S_REQ = 2'd1;
    localparam [1:0] S_XFER = 2'd2;
    localparam [1:0] S_ZERO = 2'd3;  // a transfer of no rows: count out the latency
    localparam [CW-1:0] C_ONE = 1;
    localparam [CW-1:0] C_K = K[CW-1:0];
    localparam [PW-1:0] P_ONE = 1;
    localparam integer R_LAST = R - 1;
    localparam [PW-1:0] P_LAST = R_LAST[PW-1:0];
    localparam [LW-1:0] Z_ONE = 1;
    localparam integer Z_INIT_I = (DRAM_LATENCY > 1) ? DRAM_LATENCY - 2 : 0;
    localparam [LW-1:0] Z_INIT = Z_INIT_I[LW-1:0];  // latency cycles after the grant's
    localparam [CNT_W-1:0] CNT_ONE = 1;

    input wire clk;
    input wire rst;  // active-high, synchronous
    input wire enable;  // issuing allowed (low after the run's FINISH)

    input wire cmd_valid;
    input wire [INSN_BITS-1:0] cmd_data;
    output wire cmd_pop;

    input wire tok_prev;  // compute->store holds a token
    output wire pop_prev;
    input wire room_prev;  // store->compute has room
    output wire push_prev;

    output wire req;
    output wire [DADDR_W-1:0] req_addr;
    output wire [ROWB_W-1:0] req_row_bytes;
    output wire [ROWS_W-1:0] req_rows;
    output wire [STRB_W-1:0] req_stride;
    input wire grant;
    input wire beat;
    input wire last;
    output wire [BUS_BITS-1:0] wdata;
    output wire xfer_done;  // last cycle of the transfer (frees the port)

    output wire out_rd_en;
    output wire [LOG_OUT_DEPTH-1:0] out_rd_addr;
    input wire [K_OUT*OUT_ELEM_BITS-1:0] out_rd_data;

    output wire [1:0] state;
    output wire [1:0] category;  // statistics category of this cycle (CAT_*)
    output wire waiting;
    output wire [CNT_W-1:0] issued;
    output wire [ENT_W-1:0] out_rd_entries;  // entries of this cycle's out read that go to DRAM

    // ---- decode the head
    wire [XW-1:0] h_x_size = cmd_data[MEM_X_SIZE_LSB+:MEM_X_SIZE_W];
    wire h_zero = (h_x_size == {XW{1'b0}});
    wire issue;
    wire exec_done;

    /* verilator lint_off PINCONNECTEMPTY */  // store has no next queues
    vta_issue_ctrl u_ctrl (
        .clk(clk),
        .rst(rst),
        .enable(enable),
        .head_valid(cmd_valid),
        .head_pop_prev(cmd_data[MEM_POP_PREV_DEP_LSB]),
        .head_pop_next(1'b0),
        .head_push_prev(cmd_data[MEM_PUSH_PREV_DEP_LSB]),
        .head_push_next(1'b0),
        .head_zero(h_zero),
        .tok_prev(tok_prev),
        .tok_next(1'b0),
        .room_prev(room_prev),
        .room_next(1'b0),
        .exec_done(exec_done),
        .mem_wait(req && !grant),
        .issue(issue),
        .pop_prev(pop_prev),
        .pop_next(),
        .push_prev(push_prev),
        .push_next(),
        .state(state),
        .category(category)
    );
    /* verilator lint_on PINCONNECTEMPTY */
    assign cmd_pop = issue;

    // ---- transfer state
    reg [1:0] st;
    reg [DADDR_W-1:0] addr_r;
    reg [ROWB_W-1:0] row_bytes_r;
    reg [ROWS_W-1:0] rows_r;
    reg [STRB_W-1:0] stride_r;
    reg [SADDR_W-1:0] row_addr;  // out entry of the current row's first element
    reg [CW-1:0] col;  // entry of the current beat within the row
    reg [CW-1:0] xs;
    reg [PW-1:0] part;  // beat within a wide entry
    reg [LW-1:0] zcnt;
    reg [CNT_W-1:0] issued_r;

    wire rows_zero = (rows_r == {ROWS_W{1'b0}});
    wire zero_now = (st == S_REQ) && grant && rows_zero && (DRAM_LATENCY == 1);
    assign xfer_done = (st == S_XFER && beat && last) || zero_now ||
                       (st == S_ZERO && zcnt == {LW{1'b0}});
    assign exec_done = xfer_done;
    assign req = (st == S_REQ);
    assign waiting = req;
    assign req_addr = addr_r;
    assign req_row_bytes = row_bytes_r;
    assign req_rows = rows_r;
    assign req_stride = stride_r;
    assign issued = issued_r;

    // Position of the beat after this one.
    reg [SADDR_W-1:0] nx_row_addr;
    reg [CW-1:0] nx_col;
    reg [PW-1:0] nx_part;
    always @(*) begin
        nx_row_addr = row_addr;
        nx_col = col;
        nx_part = part;
        if (R == 1) begin
            if (col + C_K >= xs) begin
                nx_col = {CW{1'b0}};
                nx_row_addr = row_addr + xs[SADDR_W-1:0];
            end else begin
                nx_col = col + C_K;
            end
        end else if (part == P_LAST) begin
            nx_part = {PW{1'b0}};
            if (col + C_ONE == xs) begin
                nx_col = {CW{1'b0}};
                nx_row_addr = row_addr + xs[SADDR_W-1:0];
            end else begin
                nx_col = col + C_ONE;
            end
        end else begin
            nx_part = part + P_ONE;
        end
    end

    // Out-buffer reads: the first beat's entries at the grant, the next beat's with each beat.
    wire rd_first = (st == S_REQ) && grant;
    wire rd_next = (st == S_XFER) && beat && !last;
    /* verilator lint_off UNUSEDSIGNAL */  // the out buffer uses the low bits of SADDR_W
    wire [SADDR_W-1:0] rd_full = rd_first ? row_addr + col[SADDR_W-1:0] :
                                            nx_row_addr + nx_col[SADDR_W-1:0];
    /* verilator lint_on UNUSEDSIGNAL */
    assign out_rd_en = rd_first || rd_next;
    assign out_rd_addr = rd_full[LOG_OUT_DEPTH-1:0];

    // Entries of the read that belong to the transfer: a narrow read holds the K entries from
    // its column on, fewer at a row's end; a wide entry is read once per beat and counts at
    // its first. A STORE of no rows reads in its grant cycle but moves nothing.
    wire rd_moves = out_rd_en && !rows_zero;
    generate
        if (R == 1) begin : g_rd_narrow
            wire [CW-1:0] rd_left = xs - (rd_first ? col : nx_col);
            /* verilator lint_off UNUSEDSIGNAL */  // at most K entries: the low bits
            wire [CW-1:0] rd_n = (rd_left > C_K) ? C_K : rd_left;
            /* verilator lint_on UNUSEDSIGNAL */
            assign out_rd_entries = rd_moves ? rd_n[ENT_W-1:0] : {ENT_W{1'b0}};
        end else begin : g_rd_wide
            localparam [ENT_W-1:0] ENT_ONE = 1;
            wire rd_first_part = rd_first ? (part == {PW{1'b0}}) : (nx_part == {PW{1'b0}});
            assign out_rd_entries = (rd_moves && rd_first_part) ? ENT_ONE : {ENT_W{1'b0}};
        end
    endgenerate

    generate
        if (R == 1) begin : g_narrow
            assign wdata = out_rd_data;
        end else begin : g_wide
            assign wdata = out_rd_data[part*BUS_BITS+:BUS_BITS];
        end
    endgenerate

    always @(posedge clk) begin
        if (rst) begin
            st <= S_IDLE;
            addr_r <= {DADDR_W{1'b0}};
            row_bytes_r <= {ROWB_W{1'b0}};
            rows_r <= {ROWS_W{1'b0}};
            stride_r <= {STRB_W{1'b0}};
            row_addr <= {SADDR_W{1'b0}};
            col <= {CW{1'b0}};
            xs <= {CW{1'b0}};
            part <= {PW{1'b0}};
            zcnt <= {LW{1'b0}};
            issued_r <= {CNT_W{1'b0}};
        end else begin
            if (issue) begin
                issued_r <= issued_r + CNT_ONE;
            end
            case (st)
                S_IDLE: begin
                    if (issue && !h_zero) begin
                        st <= S_REQ;
                        addr_r <= {{(DADDR_W - MEM_DRAM_BASE_W) {1'b0}},
                                   cmd_data[MEM_DRAM_BASE_LSB+:MEM_DRAM_BASE_W]} << LOG_OUT_EB;
                        row_bytes_r <= {{(ROWB_W - XW) {1'b0}}, h_x_size} << LOG_OUT_EB;
                        rows_r <= cmd_data[MEM_Y_SIZE_LSB+:MEM_Y_SIZE_W];
                        stride_r <= {{(STRB_W - MEM_X_STRIDE_W) {1'b0}},
                                     cmd_data[MEM_X_STRIDE_LSB+:MEM_X_STRIDE_W]} << LOG_OUT_EB;
                        row_addr <= cmd_data[MEM_SRAM_BASE_LSB+:MEM_SRAM_BASE_W];
                        col <= {CW{1'b0}};
                        xs <= {1'b0, h_x_size};
                        part <= {PW{1'b0}};
                    end
                end
                S_REQ: begin
                    if (grant) begin
                        if (!rows_zero) begin
                            st <= S_XFER;
                        end else if (DRAM_LATENCY == 1) begin
                            st <= S_IDLE;
                        end else begin
                            st <= S_ZERO;
                            zcnt <= Z_INIT;
                        end
                    end
                end
                S_XFER: begin
                    if (beat) begin
                        row_addr <= nx_row_addr;
                        col <= nx_col;
                        part <= nx_part;
                        if (last) begin
                            st <= S_IDLE;
                        end
                    end
                end
                default: begin  // S_ZERO
                    if (zcnt == {LW{1'b0}}) begin
                        st <= S_IDLE;
                    end else begin
                        zcnt <= zcnt - Z_ONE;
                    end
                end
            endcase
        end
    end

endmodule
`default_nettype wire
