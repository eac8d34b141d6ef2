`default_nettype none
// The fetch module (docs/timing.md section 5): reads the instruction stream in bursts of up to
// FETCH_BURST instructions, one DMA each (one row of 16 * k bytes), asking for the port in the
// first cycle of the run. After a burst's last beat it dispatches the buffered instructions in
// order, one per cycle, each into its module's command queue if that queue has room (otherwise
// it holds), and asks for the next burst in the cycle after the last dispatch.
// Routing (ISA.md section 3): STORE -> store; LOAD of INP or WGT -> load; everything else ->
// compute.
module vta_fetch (
    clk,
    rst,
    // run control
    enable,
    start,
    insn_base,
    insn_count,
    // DRAM port requester
    req,
    req_addr,
    req_row_bytes,
    grant,
    beat,
    last,
    rdata,
    // dispatch into the command queues
    insn,
    push_load,
    push_compute,
    push_store,
    room_load,
    room_compute,
    room_store,
    // observation
    dispatched,
    waiting,
    busy,
    category
);
/* verilator lint_off UNUSEDPARAM */  // the headers declare every constant; a module uses some
`include "vta_params.vh"
`include "vta_derived.vh"
/* verilator lint_on UNUSEDPARAM */

    localparam integer BW = $clog2(FETCH_BURST + 1);  // instructions in a burst
    localparam integer BEW = $clog2(FETCH_BEATS + 1);  // beats of a burst
    localparam [1:0] S_IDLE = 2'd0;  // nothing (more) to fetch
    localparam [1:0] S_REQ = 2'd1;
    localparam [1:0] S_XFER = 2'd2;
    localparam [1:0] S_DISP = 2'd3;
    localparam [CNT_W-1:0] BURST = FETCH_BURST[CNT_W-1:0];
    localparam [BW-1:0] B_ONE = 1;
    localparam [BEW-1:0] BE_ONE = 1;
    localparam [CNT_W-1:0] CNT_ONE = 1;
    localparam [MEM_OPCODE_W-1:0] OPC_LOAD = OPCODE_LOAD[MEM_OPCODE_W-1:0];
    localparam [MEM_OPCODE_W-1:0] OPC_STORE = OPCODE_STORE[MEM_OPCODE_W-1:0];
    localparam [MEM_MEMORY_TYPE_W-1:0] MT_INP = MEM_INP[MEM_MEMORY_TYPE_W-1:0];
    localparam [MEM_MEMORY_TYPE_W-1:0] MT_WGT = MEM_WGT[MEM_MEMORY_TYPE_W-1:0];

    input wire clk;
    input wire rst;  // active-high, synchronous

    input wire enable;  // fetching allowed (low after the run's FINISH; a burst under way ends)
    input wire start;  // begin a run (the next cycle is cycle 0)
    input wire [DADDR_W-1:0] insn_base;  // byte address of the first instruction (16-aligned)
    input wire [CNT_W-1:0] insn_count;

    output wire req;
    output wire [DADDR_W-1:0] req_addr;
    output wire [ROWB_W-1:0] req_row_bytes;  // one row: rows = 1, stride unused
    input wire grant;
    input wire beat;
    input wire last;
    input wire [BUS_BITS-1:0] rdata;

    output wire [INSN_BITS-1:0] insn;
    output wire push_load;
    output wire push_compute;
    output wire push_store;
    input wire room_load;
    input wire room_compute;
    input wire room_store;

    output wire [CNT_W-1:0] dispatched;  // instructions dispatched so far
    output wire waiting;  // asking for the port
    output wire busy;  // fetching or dispatching (not idle)
    output wire [1:0] category;  // statistics category of this cycle (CAT_*)

    reg [1:0] st;
    reg [DADDR_W-1:0] next_addr;
    reg [CNT_W-1:0] remaining;  // instructions not yet requested
    reg [BW-1:0] burst_n;  // instructions in the buffer
    reg [BW-1:0] disp;  // next buffered instruction to dispatch
    reg [BEW-1:0] beat_idx;
    reg [FETCH_BUF_BITS-1:0] buffer;
    reg [CNT_W-1:0] dispatched_r;

    // ---- the request of the next burst: k = min(FETCH_BURST, remaining)
    wire [CNT_W-1:0] k_full = (remaining < BURST) ? remaining : BURST;
    wire [BW-1:0] k = k_full[BW-1:0];
    /* verilator lint_off WIDTHEXPAND */  // k * 16 fits ROWB_W (FETCH_BURST * 16 bytes)
    assign req_row_bytes = {{(ROWB_W - BW) {1'b0}}, k} << $clog2(INSN_BYTES);
    /* verilator lint_on WIDTHEXPAND */
    assign req = enable && (st == S_REQ);
    assign waiting = req;
    assign req_addr = next_addr;
    assign busy = (st != S_IDLE);
    assign dispatched = dispatched_r;

    // ---- dispatch of the buffered instruction `disp`
    assign insn = buffer[disp*INSN_BITS+:INSN_BITS];
    wire [MEM_OPCODE_W-1:0] opc = insn[MEM_OPCODE_LSB+:MEM_OPCODE_W];
    wire [MEM_MEMORY_TYPE_W-1:0] mt = insn[MEM_MEMORY_TYPE_LSB+:MEM_MEMORY_TYPE_W];
    wire to_store = (opc == OPC_STORE);
    wire to_load = (opc == OPC_LOAD) && (mt == MT_INP || mt == MT_WGT);
    wire to_compute = !to_store && !to_load;
    wire room = to_store ? room_store : (to_load ? room_load : room_compute);
    wire dispatch = enable && (st == S_DISP) && room;
    assign push_load = dispatch && to_load;
    assign push_compute = dispatch && to_compute;
    assign push_store = dispatch && to_store;
    assign category = (st == S_IDLE) ? CAT_IDLE :
                      (st == S_REQ) ? (grant ? CAT_BUSY : CAT_WAIT_MEMORY) :
                      (st == S_XFER || dispatch) ? CAT_BUSY : CAT_WAIT_TOKEN;

    always @(posedge clk) begin
        if (rst) begin
            st <= S_IDLE;
            next_addr <= {DADDR_W{1'b0}};
            remaining <= {CNT_W{1'b0}};
            burst_n <= {BW{1'b0}};
            disp <= {BW{1'b0}};
            beat_idx <= {BEW{1'b0}};
            dispatched_r <= {CNT_W{1'b0}};
        end else if (start) begin
            st <= (insn_count != {CNT_W{1'b0}}) ? S_REQ : S_IDLE;
            next_addr <= insn_base;
            remaining <= insn_count;
            dispatched_r <= {CNT_W{1'b0}};
        end else begin
            case (st)
                S_REQ: begin
                    if (req && grant) begin
                        st <= S_XFER;
                        burst_n <= k;
                        beat_idx <= {BEW{1'b0}};
                        /* verilator lint_off WIDTHEXPAND */
                        next_addr <= next_addr + ({{(DADDR_W - BW) {1'b0}}, k} << $clog2(INSN_BYTES));
                        /* verilator lint_on WIDTHEXPAND */
                        remaining <= remaining - k_full;
                    end
                end
                S_XFER: begin
                    if (beat) begin
                        beat_idx <= beat_idx + BE_ONE;
                        if (last) begin
                            st <= S_DISP;
                            disp <= {BW{1'b0}};
                        end
                    end
                end
                S_DISP: begin
                    if (dispatch) begin
                        dispatched_r <= dispatched_r + CNT_ONE;
                        disp <= disp + B_ONE;
                        if (disp + B_ONE == burst_n) begin
                            st <= (remaining != {CNT_W{1'b0}}) ? S_REQ : S_IDLE;
                        end
                    end
                end
                default: begin
                end
            endcase
        end
    end

    always @(posedge clk) begin
        if (st == S_XFER && beat) begin
            buffer[beat_idx*BUS_BITS+:BUS_BITS] <= rdata;
        end
    end

endmodule
`default_nettype wire
