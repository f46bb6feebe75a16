# Shared by bench/peers.sh, bench/ceiling.sh and bench/shapes.sh (sourced,
# not run): the servers they start in turn and measure.
#
# The caller sets OUT (its output folder) and SCRIPT (its name, for
# messages), and defines run_server NAME (one measured run of a server).

# Creates the output folder $OUT, makes it absolute (builds run in their
# own directories) and empties its samples file.
server_out_open() {
    mkdir -p "$OUT" || exit 1
    OUT=$(cd "$OUT" && pwd)
    : >"$OUT/samples.txt"
}

# blitz's and Tokio's servers run until their stdin closes: a FIFO the
# script holds open on descriptor 9 (read-write, so opening it never
# blocks); every server is also killed after its run.
server_stdin_open() {
    rm -f "$OUT/stdin.fifo"
    mkfifo "$OUT/stdin.fifo" || exit 1
    exec 9<>"$OUT/stdin.fifo"
}

# Waits until server $1 (started in the background, output in $2) prints
# its port ("PORT n" or "PORT=n"); sets PORT.
server_wait_port() {
    PORT=
    for _ in $(seq 100); do
        PORT=$(sed -n 's/^PORT[= ]//p' "$2" | head -1)
        [ -n "$PORT" ] && return 0
        sleep 0.05
    done
    echo "$SCRIPT: $1 did not start" >&2
    return 1
}

# The `env` arguments that remove every BLITZ_* variable: a server started
# with them runs as a user's program that sets none.
blitz_env_unset() {
    env | sed -n 's/^\(BLITZ_[A-Za-z0-9_]*\)=.*/-u \1/p'
}

# User plus system CPU time of process $1, in clock ticks (1/100 s).
server_cpu_ticks() {
    awk '{print $14 + $15}' "/proc/$1/stat"
}

# REPEAT rounds of run_server over SERVERS, in an order that rotates each
# round (this VM's speed drifts over tens of seconds: a fixed order would
# favour the first); "# round=N" lines in $OUT/samples.txt separate them.
server_rounds() {
    local ns=${#SERVERS[@]} rep k
    for rep in $(seq 1 "$REPEAT"); do
        echo "== round $rep/$REPEAT" >&2
        echo "# round=$rep" >>"$OUT/samples.txt"
        for k in $(seq 0 $((ns - 1))); do
            run_server "${SERVERS[$(((k + rep - 1) % ns))]}"
        done
    done
}
