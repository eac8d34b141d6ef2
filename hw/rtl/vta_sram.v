`default_nettype none
// An on-chip buffer with one write port and one read port, each moving BANKS consecutive
// entries per cycle. The entries are banked by address modulo BANKS, so any BANKS consecutive
// entries (any start address) fall in distinct banks: a bus beat of narrow elements is written
// (or read) in one cycle. Reads take one cycle and are write-first: a read of an entry written
// in the same cycle returns the new data, which is how consecutive micro-ops that update the
// same accumulator see each other's results without stalling. Entries start at zero.
module vta_sram (
    clk,
    // write port: entries wr_addr .. wr_addr + BANKS - 1, lane j enabled by wr_mask[j]
    wr_en,
    wr_addr,
    wr_mask,
    wr_data,
    // read port: entries rd_addr .. rd_addr + BANKS - 1, lane j in rd_data[j], next cycle
    rd_en,
    rd_addr,
    rd_data
);
    parameter integer WIDTH = 8;  // bits of one entry; > 0
    parameter integer DEPTH = 4;  // entries; a power of two, greater than BANKS
    parameter integer BANKS = 1;  // entries per access; a power of two, less than DEPTH

    localparam integer AW = $clog2(DEPTH);
    localparam integer LB = (BANKS > 1) ? $clog2(BANKS) : 1;
    localparam integer BD = DEPTH / BANKS;  // entries per bank
    localparam integer RW = (BANKS > 1) ? AW - LB : AW;  // row address inside a bank

    input wire clk;

    input wire wr_en;
    input wire [AW-1:0] wr_addr;
    input wire [BANKS-1:0] wr_mask;
    input wire [BANKS*WIDTH-1:0] wr_data;

    input wire rd_en;
    input wire [AW-1:0] rd_addr;
    output wire [BANKS*WIDTH-1:0] rd_data;

    generate
        if (BANKS == 1) begin : g_single
            reg [WIDTH-1:0] mem[0:DEPTH-1];
            reg [WIDTH-1:0] q;
            wire wen = wr_en & wr_mask[0];
            integer i;

            initial begin
                for (i = 0; i < DEPTH; i = i + 1) begin
                    mem[i] = {WIDTH{1'b0}};
                end
                q = {WIDTH{1'b0}};
            end

            always @(posedge clk) begin
                if (wen) begin
                    mem[wr_addr] <= wr_data;
                end
                if (rd_en) begin
                    q <= (wen && wr_addr == rd_addr) ? wr_data : mem[rd_addr];
                end
            end

            assign rd_data = q;
        end else begin : g_banked
            wire [BANKS*WIDTH-1:0] q_all;
            reg [LB-1:0] rd_lo;
            genvar b;
            genvar j;

            for (b = 0; b < BANKS; b = b + 1) begin : g_bank
                localparam [LB-1:0] BID = b;
                // Lane of the write (and of the read) that lands in this bank.
                wire [LB-1:0] wj = BID - wr_addr[LB-1:0];
                wire [LB-1:0] rj = BID - rd_addr[LB-1:0];
                /* verilator lint_off UNUSEDSIGNAL */  // the low bits select the bank, not the row
                wire [AW-1:0] w_entry = wr_addr + {{RW{1'b0}}, wj};
                wire [AW-1:0] r_entry = rd_addr + {{RW{1'b0}}, rj};
                /* verilator lint_on UNUSEDSIGNAL */
                wire [RW-1:0] wrow = w_entry[AW-1:LB];
                wire [RW-1:0] rrow = r_entry[AW-1:LB];
                wire wen = wr_en & wr_mask[wj];
                wire [WIDTH-1:0] wdat = wr_data[wj*WIDTH+:WIDTH];
                reg [WIDTH-1:0] mem[0:BD-1];
                reg [WIDTH-1:0] q;
                integer i;

                initial begin
                    for (i = 0; i < BD; i = i + 1) begin
                        mem[i] = {WIDTH{1'b0}};
                    end
                    q = {WIDTH{1'b0}};
                end

                always @(posedge clk) begin
                    if (wen) begin
                        mem[wrow] <= wdat;
                    end
                    if (rd_en) begin
                        q <= (wen && wrow == rrow) ? wdat : mem[rrow];
                    end
                end

                assign q_all[b*WIDTH+:WIDTH] = q;
            end

            initial rd_lo = {LB{1'b0}};
            always @(posedge clk) begin
                if (rd_en) begin
                    rd_lo <= rd_addr[LB-1:0];
                end
            end

            for (j = 0; j < BANKS; j = j + 1) begin : g_lane
                localparam [LB-1:0] JID = j;
                wire [LB-1:0] bsel = rd_lo + JID;
                assign rd_data[j*WIDTH+:WIDTH] = q_all[bsel*WIDTH+:WIDTH];
            end
        end
    endgenerate

endmodule
`default_nettype wire
