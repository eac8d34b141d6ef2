`default_nettype none
// Receive side of a 2-D LOAD for one element size: turns the bus beats of a transfer into SRAM
// entry writes. Each row of x_size elements starts on a new beat (docs/timing.md section 3).
// Elements no wider than the bus: a beat carries K = BUS_BYTES / EB entries, written in one
// cycle through a K-lane port (lanes past the end of the row are masked off). Wider elements:
// R = EB / BUS_BYTES beats are gathered into one entry, written with the last of them.
// Data rows land at row0, row0 + pitch, ... (pitch = the padded row width).
module vta_dma_rx (
    clk,
    rst,
    // transfer (sampled on start)
    start,
    row0,
    pitch,
    x_size,
    // beats of this transfer
    beat,
    data,
    // SRAM writes
    wr_en,
    wr_addr,
    wr_mask,
    wr_data
);
/* verilator lint_off UNUSEDPARAM */  // the headers declare every constant; a module uses some
`include "vta_params.vh"
`include "vta_derived.vh"
/* verilator lint_on UNUSEDPARAM */

    parameter integer EB = 4;  // bytes of one SRAM element; a power of two (from the header)

    localparam integer K = (BUS_BYTES > EB) ? BUS_BYTES / EB : 1;  // entries per beat
    localparam integer R = (EB > BUS_BYTES) ? EB / BUS_BYTES : 1;  // beats per entry
    localparam integer XW = MEM_X_SIZE_W;
    localparam integer CW = XW + 1;  // column counter (entries within a row)
    localparam integer PW = (R > 1) ? $clog2(R) : 1;
    localparam [CW-1:0] C_ONE = 1;
    localparam [CW-1:0] C_K = K[CW-1:0];
    localparam [PW-1:0] P_ONE = 1;
    localparam integer R_LAST = R - 1;
    localparam [PW-1:0] P_LAST = R_LAST[PW-1:0];

    input wire clk;
    input wire rst;  // active-high, synchronous

    input wire start;
    input wire [SADDR_W-1:0] row0;  // SRAM entry of the first data element
    input wire [SADDR_W-1:0] pitch;  // entries from one data row to the next
    input wire [XW-1:0] x_size;  // elements per row (> 0)

    input wire beat;
    input wire [BUS_BITS-1:0] data;

    output wire wr_en;
    output wire [SADDR_W-1:0] wr_addr;
    output wire [K-1:0] wr_mask;
    output wire [K*EB*8-1:0] wr_data;

    reg [SADDR_W-1:0] row_addr;
    reg [SADDR_W-1:0] pitch_r;
    reg [CW-1:0] xs;
    reg [CW-1:0] col;

    assign wr_addr = row_addr + col[SADDR_W-1:0];

    generate
        if (R == 1) begin : g_narrow
            genvar j;
            for (j = 0; j < K; j = j + 1) begin : g_mask
                localparam [CW-1:0] JC = j;
                assign wr_mask[j] = (col + JC) < xs;
            end
            assign wr_en = beat;
            assign wr_data = data;

            always @(posedge clk) begin
                if (rst) begin
                    row_addr <= {SADDR_W{1'b0}};
                    pitch_r <= {SADDR_W{1'b0}};
                    xs <= {CW{1'b0}};
                    col <= {CW{1'b0}};
                end else if (start) begin
                    row_addr <= row0;
                    pitch_r <= pitch;
                    xs <= {1'b0, x_size};
                    col <= {CW{1'b0}};
                end else if (beat) begin
                    if (col + C_K >= xs) begin
                        col <= {CW{1'b0}};
                        row_addr <= row_addr + pitch_r;
                    end else begin
                        col <= col + C_K;
                    end
                end
            end
        end else begin : g_wide
            reg [(R-1)*BUS_BITS-1:0] gather;  // the first R - 1 beats of the entry
            reg [PW-1:0] part;
            wire entry_end = (part == P_LAST);
            assign wr_mask = 1'b1;
            assign wr_en = beat && entry_end;
            assign wr_data = {data, gather};

            always @(posedge clk) begin
                if (rst) begin
                    row_addr <= {SADDR_W{1'b0}};
                    pitch_r <= {SADDR_W{1'b0}};
                    xs <= {CW{1'b0}};
                    col <= {CW{1'b0}};
                    part <= {PW{1'b0}};
                    gather <= {((R - 1) * BUS_BITS) {1'b0}};
                end else if (start) begin
                    row_addr <= row0;
                    pitch_r <= pitch;
                    xs <= {1'b0, x_size};
                    col <= {CW{1'b0}};
                    part <= {PW{1'b0}};
                end else if (beat) begin
                    if (entry_end) begin
                        part <= {PW{1'b0}};
                        if (col + C_ONE == xs) begin
                            col <= {CW{1'b0}};
                            row_addr <= row_addr + pitch_r;
                        end else begin
                            col <= col + C_ONE;
                        end
                    end else begin
                        part <= part + P_ONE;
                        gather[part*BUS_BITS+:BUS_BITS] <= data;
                    end
                end
            end
        end
    endgenerate

endmodule
`default_nettype wire
