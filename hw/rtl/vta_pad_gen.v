`default_nettype none
// Zero padding of a LOAD: writes one SRAM entry per cycle, every padded entry, before the load
// asks for the port (docs/timing.md section 3). The padded rectangle of a LOAD is filled from
// sram_base with rows of W = x_pad_0 + x_size + x_pad_1 entries: y_pad_0 zero rows, y_size rows
// of (x_pad_0 zeros, x_size data entries, x_pad_1 zeros), then y_pad_1 zero rows. Its zero
// entries form contiguous runs separated by the x_size data entries of each row:
//   run A = y_pad_0 rows + the left pad of data row 0        (y_pad_0 * W + x_pad_0 entries)
//   runs M = right pad of row y + left pad of row y + 1     (x_pad_1 + x_pad_0, y_size - 1 runs)
//   run Z = right pad of the last data row + y_pad_1 rows   (x_pad_1 + y_pad_1 * W)
// With y_size = 0 there is a single run of (y_pad_0 + y_pad_1) * W entries. Empty runs take
// no cycle, so the pad phase lasts exactly P cycles.
module vta_pad_gen (
    clk,
    rst,
    // instruction (sampled on start)
    start,
    sram_base,
    y_size,
    x_size,
    y_pad_0,
    y_pad_1,
    x_pad_0,
    x_pad_1,
    none,
    // zero writes
    wr_en,
    wr_addr,
    last
);
/* verilator lint_off UNUSEDPARAM */  // the headers declare every constant; a module uses some
`include "vta_params.vh"
`include "vta_derived.vh"
/* verilator lint_on UNUSEDPARAM */

    localparam integer PW = MEM_Y_PAD_0_W;  // pad fields (all four have the same width)
    localparam integer YW = MEM_Y_SIZE_W;
    localparam integer XW = MEM_X_SIZE_W;
    localparam integer LW = XW + PW + 2;  // run lengths: up to (2^PW - 1) * 2 * W
    localparam [1:0] PH_IDLE = 2'd0;
    localparam [1:0] PH_A = 2'd1;
    localparam [1:0] PH_M = 2'd2;
    localparam [1:0] PH_Z = 2'd3;
    localparam [LW-1:0] L_ONE = 1;
    localparam [YW-1:0] Y_ONE = 1;
    localparam [SADDR_W-1:0] A_ONE = 1;

    input wire clk;
    input wire rst;  // active-high, synchronous

    input wire start;  // begin padding (only when !none)
    input wire [SADDR_W-1:0] sram_base;
    input wire [YW-1:0] y_size;
    input wire [XW-1:0] x_size;
    input wire [PW-1:0] y_pad_0;
    input wire [PW-1:0] y_pad_1;
    input wire [PW-1:0] x_pad_0;
    input wire [PW-1:0] x_pad_1;
    output wire none;  // combinational: the instruction on the inputs has no padded entry

    output wire wr_en;  // write a zero entry this cycle
    output wire [SADDR_W-1:0] wr_addr;
    output wire last;  // this is the last zero entry

    // ---- run lengths of the instruction on the inputs
    wire [LW-1:0] width = {{(LW - XW) {1'b0}}, x_size} + {{(LW - PW) {1'b0}}, x_pad_0} +
                          {{(LW - PW) {1'b0}}, x_pad_1};
    wire [LW-1:0] yp0 = {{(LW - PW) {1'b0}}, y_pad_0};
    wire [LW-1:0] yp1 = {{(LW - PW) {1'b0}}, y_pad_1};
    wire [LW-1:0] xp0 = {{(LW - PW) {1'b0}}, x_pad_0};
    wire [LW-1:0] xp1 = {{(LW - PW) {1'b0}}, x_pad_1};
    wire y_zero = (y_size == {YW{1'b0}});
    /* verilator lint_off WIDTHTRUNC */  // products are bounded by LW and SADDR_W wraps
    wire [LW-1:0] in_len_a = y_zero ? (yp0 + yp1) * width : yp0 * width + xp0;
    wire [LW-1:0] in_len_m = xp0 + xp1;
    wire [LW-1:0] in_len_z = y_zero ? {LW{1'b0}} : xp1 + yp1 * width;
    wire [YW-1:0] in_m_runs = (!y_zero && in_len_m != {LW{1'b0}}) ? y_size - Y_ONE : {YW{1'b0}};
    wire [SADDR_W-1:0] in_m_start = sram_base + in_len_a[SADDR_W-1:0] + x_size[SADDR_W-1:0];
    /* verilator lint_off UNUSEDSIGNAL */  // SRAM addresses wrap at SADDR_W bits
    wire [LW-1:0] z_rows = ({{(LW - YW) {1'b0}}, y_size} + yp0) * width;
    /* verilator lint_on UNUSEDSIGNAL */
    wire [SADDR_W-1:0] in_z_start = sram_base + z_rows[SADDR_W-1:0] - xp1[SADDR_W-1:0];
    /* verilator lint_on WIDTHTRUNC */
    assign none = (in_len_a == {LW{1'b0}}) && (in_m_runs == {YW{1'b0}}) &&
                  (in_len_z == {LW{1'b0}});

    // ---- state
    reg [1:0] ph;
    reg [LW-1:0] cnt;  // entries left in the current run
    reg [SADDR_W-1:0] addr;
    reg [YW-1:0] m_left;  // M runs not yet finished (including the current one)
    reg [LW-1:0] len_m;
    reg [LW-1:0] len_z;
    reg [SADDR_W-1:0] z_start;
    reg [SADDR_W-1:0] skip;  // x_size: entries between two runs

    wire active = (ph != PH_IDLE);
    wire run_end = active && (cnt == L_ONE);
    wire more_m = (ph == PH_A) ? (m_left != {YW{1'b0}}) : (m_left != Y_ONE);
    wire have_z = (len_z != {LW{1'b0}});
    assign wr_en = active;
    assign wr_addr = addr;
    assign last = run_end && ((ph == PH_Z) || (!more_m && !have_z));

    always @(posedge clk) begin
        if (rst) begin
            ph <= PH_IDLE;
            cnt <= {LW{1'b0}};
            addr <= {SADDR_W{1'b0}};
            m_left <= {YW{1'b0}};
            len_m <= {LW{1'b0}};
            len_z <= {LW{1'b0}};
            z_start <= {SADDR_W{1'b0}};
            skip <= {SADDR_W{1'b0}};
        end else if (start) begin
            m_left <= in_m_runs;
            len_m <= in_len_m;
            len_z <= in_len_z;
            z_start <= in_z_start;
            skip <= x_size[SADDR_W-1:0];
            if (in_len_a != {LW{1'b0}}) begin
                ph <= PH_A;
                cnt <= in_len_a;
                addr <= sram_base;
            end else if (in_m_runs != {YW{1'b0}}) begin
                ph <= PH_M;
                cnt <= in_len_m;
                addr <= in_m_start;
            end else if (in_len_z != {LW{1'b0}}) begin
                ph <= PH_Z;
                cnt <= in_len_z;
                addr <= in_z_start;
            end else begin
                ph <= PH_IDLE;
            end
        end else if (active) begin
            if (!run_end) begin
                cnt <= cnt - L_ONE;
                addr <= addr + A_ONE;
            end else if (ph == PH_Z) begin
                ph <= PH_IDLE;
            end else begin
                if (ph == PH_M) begin
                    m_left <= m_left - Y_ONE;
                end
                if (more_m) begin
                    ph <= PH_M;
                    cnt <= len_m;
                    addr <= addr + A_ONE + skip;
                end else if (have_z) begin
                    ph <= PH_Z;
                    cnt <= len_z;
                    addr <= z_start;
                end else begin
                    ph <= PH_IDLE;
                end
            end
        end
    end

endmodule
`default_nettype wire
