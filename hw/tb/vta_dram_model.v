`default_nettype none
// Testbench DRAM: serves the accelerator's memory port (see hw/README.md, "Memory port").
// A request seen at the end of cycle g (mem_req_valid in its grant cycle g) gets its first beat
// in cycle g + DRAM_LATENCY and then one beat of BUS_BYTES per cycle; each row starts on a new
// beat and its last beat carries only the row's remaining bytes. Reads present the beat's bytes
// on rdata; writes store the bytes of wdata at the end of each beat cycle.
// Plusargs: +DRAM_INIT=<hex file> (one BUS_BYTES word per line, little-endian),
// +DRAM_WORDS=<n> (words in the files), +DRAM_OUT=<hex file> (written when `dump` is high at a
// clock edge),
// and two knobs that only stretch timing: +DRAM_EXTRA_LATENCY=<cycles> and +DRAM_GAPS=<0..7>
// (an idle cycle before a beat with probability n/8, from an LFSR).
module vta_dram_model (
    clk,
    rst,
    // memory port
    req_valid,
    req_write,
    req_addr,
    req_row_bytes,
    req_rows,
    req_stride,
    beat,
    last,
    rdata,
    wdata,
    // testbench control
    dump
);
/* verilator lint_off UNUSEDPARAM */  // the headers declare every constant; a module uses some
`include "vta_params.vh"
`include "vta_derived.vh"
/* verilator lint_on UNUSEDPARAM */

    parameter integer LOG_WORDS = 16;  // size: 2^LOG_WORDS words of BUS_BYTES bytes

    localparam integer WORDS = 1 << LOG_WORDS;
    localparam [31:0] BUS = BUS_BYTES;

    input wire clk;
    input wire rst;

    input wire req_valid;
    input wire req_write;
    input wire [DADDR_W-1:0] req_addr;
    input wire [ROWB_W-1:0] req_row_bytes;
    input wire [ROWS_W-1:0] req_rows;
    input wire [STRB_W-1:0] req_stride;
    output reg beat;
    output reg last;
    output reg [BUS_BITS-1:0] rdata;
    input wire [BUS_BITS-1:0] wdata;

    input wire dump;

    reg [BUS_BITS-1:0] mem[0:WORDS-1];
    reg [8*1024-1:0] init_file;
    reg [8*1024-1:0] out_file;
    integer dump_words;
    integer extra_latency;
    integer gaps;
    integer i;

    initial begin
        for (i = 0; i < WORDS; i = i + 1) begin
            mem[i] = {BUS_BITS{1'b0}};
        end
        extra_latency = 0;
        gaps = 0;
        dump_words = WORDS;
        if ($value$plusargs("DRAM_EXTRA_LATENCY=%d", extra_latency)) begin
        end
        if ($value$plusargs("DRAM_GAPS=%d", gaps)) begin
        end
        if ($value$plusargs("DRAM_WORDS=%d", dump_words)) begin
        end
        if ($value$plusargs("DRAM_INIT=%s", init_file)) begin
            $readmemh(init_file, mem, 0, dump_words - 1);
        end
        if (!$value$plusargs("DRAM_OUT=%s", out_file)) begin
            out_file = "dram_out.hex";
        end
    end

    /* verilator lint_off UNUSEDSIGNAL */  // addresses wrap at the model's size
    function [7:0] read_byte(input [DADDR_W-1:0] a);
        reg [BUS_BITS-1:0] w;
        begin
            w = mem[a[LOG_BUS_BYTES+LOG_WORDS-1:LOG_BUS_BYTES]];
            read_byte = w[a[LOG_BUS_BYTES-1:0]*8+:8];
        end
    endfunction

    function [BUS_BITS-1:0] read_beat(input [DADDR_W-1:0] a);
        integer k;
        begin
            read_beat = {BUS_BITS{1'b0}};
            for (k = 0; k < BUS_BYTES; k = k + 1) begin
                read_beat[k*8+:8] = read_byte(a + {{(DADDR_W - 32) {1'b0}}, k});
            end
        end
    endfunction

    task write_beat(input [DADDR_W-1:0] a, input integer n, input [BUS_BITS-1:0] d);
        integer k;
        reg [DADDR_W-1:0] b;
        reg [BUS_BITS-1:0] w;
        begin
            for (k = 0; k < n; k = k + 1) begin
                b = a + {{(DADDR_W - 32) {1'b0}}, k};
                w = mem[b[LOG_BUS_BYTES+LOG_WORDS-1:LOG_BUS_BYTES]];
                w[b[LOG_BUS_BYTES-1:0]*8+:8] = d[k*8+:8];
                mem[b[LOG_BUS_BYTES+LOG_WORDS-1:LOG_BUS_BYTES]] = w;
            end
        end
    endtask
    /* verilator lint_on UNUSEDSIGNAL */

    // Transfer state.
    reg pending;
    reg wr;
    reg [DADDR_W-1:0] row_start;
    reg [ROWB_W-1:0] row_bytes;
    reg [ROWS_W-1:0] rows_left;
    reg [STRB_W-1:0] stride;
    reg [ROWB_W-1:0] off;  // byte offset of the next beat in its row
    integer wait_cnt;
    reg [DADDR_W-1:0] cur_addr;  // the beat presented in this cycle
    integer cur_n;
    reg [ROWB_W-1:0] left;  // bytes of the row from this beat on
    reg [15:0] lfsr;
    reg row_end;

    // A behavioural model: blocking assignments keep the transfer state of one cycle in order.
    /* verilator lint_off BLKSEQ */
    always @(posedge clk) begin
        if (rst) begin
            pending = 1'b0;
            wr = 1'b0;
            wait_cnt = 0;
            lfsr = 16'hace1;
            beat <= 1'b0;
            last <= 1'b0;
            rdata <= {BUS_BITS{1'b0}};
        end else begin
            if (beat && wr) begin
                write_beat(cur_addr, cur_n, wdata);
            end
            if (req_valid) begin
                pending = 1'b1;
                wr = req_write;
                row_start = req_addr;
                row_bytes = req_row_bytes;
                rows_left = req_rows;
                stride = req_stride;
                off = {ROWB_W{1'b0}};
                wait_cnt = DRAM_LATENCY - 1 + extra_latency;
            end
            beat <= 1'b0;
            last <= 1'b0;
            lfsr = {lfsr[14:0], lfsr[15] ^ lfsr[13] ^ lfsr[12] ^ lfsr[10]};
            if (pending) begin
                if (wait_cnt > 0) begin
                    wait_cnt = wait_cnt - 1;
                end else if (gaps > 0 && {29'd0, lfsr[2:0]} < gaps) begin
                    // an idle cycle before this beat
                end else begin
                    cur_addr = row_start + {{(DADDR_W - ROWB_W) {1'b0}}, off};
                    left = row_bytes - off;
                    row_end = (left <= BUS[ROWB_W-1:0]);
                    cur_n = row_end ? {{(32 - ROWB_W) {1'b0}}, left} : BUS_BYTES;
                    beat <= 1'b1;
                    last <= row_end && (rows_left == 1);
                    if (!wr) begin
                        rdata <= read_beat(cur_addr);
                    end
                    if (row_end) begin
                        off = {ROWB_W{1'b0}};
                        row_start = row_start + {{(DADDR_W - STRB_W) {1'b0}}, stride};
                        rows_left = rows_left - 1;
                        if (rows_left == 0) begin
                            pending = 1'b0;
                        end
                    end else begin
                        off = off + BUS[ROWB_W-1:0];
                    end
                end
            end
            if (dump) begin
                $writememh(out_file, mem, 0, dump_words - 1);
            end
        end
    end
    /* verilator lint_on BLKSEQ */

endmodule
`default_nettype wire
