`default_nettype none
// The life of an instruction in load, compute or store (docs/timing.md section 2).
// Issue: in a cycle where the module is free, its command queue's head is visible and every
// queue the head pops holds a token, the head is taken and its tokens popped (`issue`).
// Execution: the module's datapath runs for E cycles and flags the last one (`exec_done`);
// an instruction with E = 0 (`head_zero`) ends in its issue cycle. Push: in the last cycle the
// instruction pushes its tokens if every pushed queue has room, otherwise it holds until they
// all have room and pushes them together. The module is free again the cycle after the push.
// A module has a "prev" and a "next" queue pair; a flag naming a queue the module lacks is
// tied off by the parent (its *_prev or *_next inputs are 0). Nothing issues while `enable` is
// low (after the run's FINISH), but an instruction under way runs to its end.
module vta_issue_ctrl (
    clk,
    rst,
    enable,
    // head of the command queue, decoded
    head_valid,
    head_pop_prev,
    head_pop_next,
    head_push_prev,
    head_push_next,
    head_zero,
    // dependency queues (registered state)
    tok_prev,
    tok_next,
    room_prev,
    room_next,
    // datapath
    exec_done,
    mem_wait,
    // decisions of this cycle
    issue,
    pop_prev,
    pop_next,
    push_prev,
    push_next,
    // observation
    state,
    category
);
/* verilator lint_off UNUSEDPARAM */  // the headers declare every constant; a module uses some
`include "vta_params.vh"
`include "vta_derived.vh"
/* verilator lint_on UNUSEDPARAM */

    input wire clk;
    input wire rst;  // active-high, synchronous
    input wire enable;  // issuing allowed (the run is on)

    input wire head_valid;  // the command queue holds an instruction
    input wire head_pop_prev;  // the head pops its prev queue
    input wire head_pop_next;  // the head pops its next queue
    input wire head_push_prev;  // the head pushes its prev queue
    input wire head_push_next;  // the head pushes its next queue
    input wire head_zero;  // the head executes in zero cycles (E = 0)

    input wire tok_prev;  // prev queue holds a token
    input wire tok_next;  // next queue holds a token
    input wire room_prev;  // prev queue has room for a token
    input wire room_next;  // next queue has room for a token

    input wire exec_done;  // last execution cycle of the current instruction (state EXEC)
    input wire mem_wait;  // the datapath asks for the DRAM port and is not granted this cycle

    output wire issue;  // take the head: pop the command queue, start the datapath
    output wire pop_prev;
    output wire pop_next;
    output wire push_prev;
    output wire push_next;

    output wire [1:0] state;
    output wire [1:0] category;  // statistics category of this cycle (CAT_*)

    reg [1:0] st;
    reg push_prev_r;
    reg push_next_r;

    wire is_free = (st == ST_FREE);
    assign issue = enable && is_free && head_valid && (!head_pop_prev || tok_prev) &&
                   (!head_pop_next || tok_next);
    assign pop_prev = issue && head_pop_prev;
    assign pop_next = issue && head_pop_next;

    // The pushes of the instruction that ends in this cycle.
    wire cur_push_prev = is_free ? head_push_prev : push_prev_r;
    wire cur_push_next = is_free ? head_push_next : push_next_r;
    wire ends = (issue && head_zero) || (st == ST_EXEC && exec_done) || (st == ST_HOLD);
    wire room_ok = (!cur_push_prev || room_prev) && (!cur_push_next || room_next);
    wire do_push = ends && room_ok;

    assign push_prev = do_push && cur_push_prev;
    assign push_next = do_push && cur_push_next;
    assign state = st;
    assign category = (st == ST_HOLD) ? CAT_WAIT_TOKEN :
                      (st == ST_EXEC) ? (mem_wait ? CAT_WAIT_MEMORY : CAT_BUSY) :
                      issue ? CAT_BUSY : (head_valid ? CAT_WAIT_TOKEN : CAT_IDLE);

    always @(posedge clk) begin
        if (rst) begin
            st <= ST_FREE;
            push_prev_r <= 1'b0;
            push_next_r <= 1'b0;
        end else begin
            if (issue) begin
                push_prev_r <= head_push_prev;
                push_next_r <= head_push_next;
            end
            if (ends) begin
                st <= room_ok ? ST_FREE : ST_HOLD;
            end else if (issue) begin
                st <= ST_EXEC;
            end
        end
    end

endmodule
`default_nettype wire
