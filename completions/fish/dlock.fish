# fish completion for dlock(1)

# Prints the form being completed: run (with or without the word), status,
# history, release, acquire, extend, help or version. Subcommand words are
# recognised only as the first argument, once it is complete.
function __dlock_form
    set -l tokens (commandline -opc)
    set -l i (__dlock_form_index)
    if test $i -le (count $tokens)
        and contains -- $tokens[$i] status history release acquire extend help version
        echo $tokens[$i]
    else
        echo run
    end
end

# The position of the first token that is neither an option nor an
# option's value: the word that decides the form (the token being typed
# when there is none yet).
function __dlock_form_index
    set -l tokens (commandline -opc)
    set -l i 2
    while test $i -le (count $tokens)
        switch $tokens[$i]
            case --
                break
            case '--*=*'
            case -k --key --limit -w --wait --timeout -E --conflict-exit-code -t --ttl \
                    --on-lost --kill-after --max-hold --min-hold -S --server --prefix \
                    --config --password-file --tls-ca --tls-cert --tls-key --node-timeout \
                    --connect-budget --wait-replicas --history --unavailable --fd --metrics-dir --log-format --count --token -c --command
                set i (math $i + 1)
            case '-?*'
            case '*'
                break
        end
        set i (math $i + 1)
    end
    echo $i
end

# __dlock_takes FORM...: true where the form being completed is one of
# FORM... and an option may come there: in the run form before KEY, in the
# others anywhere before a --.
function __dlock_takes
    set -l form (__dlock_form)
    contains -- $form $argv; or return 1
    test $form = run; and __dlock_in_options
    and return 0
    test $form != run; and not contains -- -- (commandline -opc)
end

# The locks on the servers the command line names so far, from
# `dlock status --json`; nothing, quietly and soon, when none answers.
function __dlock_locks
    set -l tokens (commandline -opc)
    set -l opts
    set -l i 2
    while test $i -le (count $tokens)
        set -l t $tokens[$i]
        switch $t
            case -S --server --prefix --config --password-file --tls-ca --tls-cert --tls-key
                test $i -lt (count $tokens); and set -a opts $t $tokens[(math $i + 1)]
                set i (math $i + 1)
            case '--server=*' '--prefix=*' '--config=*' '--password-file=*' '-S?*' \
                    '--tls-ca=*' '--tls-cert=*' '--tls-key=*' --tls-insecure
                set -a opts $t
            case --
                break
        end
        set i (math $i + 1)
    end
    timeout 1 $tokens[1] status $opts --node-timeout 0.5 --json 2>/dev/null </dev/null |
        string match -rag '"name":"((?:[^"\\\\]|\\\\.)*)"' |
        string replace -ra '\\\\(.)' '$1'
end

# Where KEY goes in a form other than run: status takes any number, the
# others one (acquire's is a new name: nothing to offer).
function __dlock_wants_lock
    set -l form (__dlock_form)
    contains -- $form status history release extend; or return 1
    test $form = status; and return 0
    set -l tokens (commandline -opc)
    set -l n 0
    set -l skip 0
    for t in $tokens[(math (__dlock_form_index) + 1)..-1]
        if test $skip = 1
            set skip 0
            continue
        end
        switch $t
            case --
            case -S --server --prefix --config --password-file --tls-ca --tls-cert \
                    --tls-key --node-timeout --connect-budget --count --token --ttl
                set skip 1
            case '-*'
                # clustered short options ending in one that takes a value
                string match -qr -- '^-[^-]*[StEw]$' $t; and set skip 1
                test $form = history; and string match -qr -- '^-[^-]*n$' $t; and set skip 1
            case '*'
                set n (math $n + 1)
        end
    end
    test $n -eq 0
end

# Prints the position of KEY among the tokens before the cursor (it may be
# the token being typed) and succeeds, or fails while options still come:
# the run form's.
function __dlock_key_index
    test (__dlock_form) = run; or return 1
    set -l tokens (commandline -opc)
    set -l i 2
    set -l multi 0	# -k: no KEY, the command follows the options
    set -l at (__dlock_form_index)
    test "$tokens[$at]" = run; and set i (math $at + 1)
    while test $i -le (count $tokens)
        set -l t $tokens[$i]
        switch $t
            case --
                math $i + 1 - $multi
                return 0
            case '--key=*'
                set multi 1
            case --key
                set multi 1
                set i (math $i + 1)
            case '--*=*'
            case --limit --wait --timeout --conflict-exit-code --ttl --on-lost \
                    --kill-after --max-hold --min-hold --server --prefix --config \
                    --password-file --tls-ca --tls-cert --tls-key \
                    --node-timeout --connect-budget --wait-replicas --history \
                    --unavailable --metrics-dir --log-format --count --token --command
                set i (math $i + 1)
            case '--*'
            case '-?*'
                # Clustered short options: one that takes a value takes
                # the rest of the token or, if none, the next token.
                set -l chars (string split '' -- (string sub -s 2 -- $t))
                for j in (seq (count $chars))
                    if contains -- $chars[$j] w E t S c k
                        test $chars[$j] = k; and set multi 1
                        test $j -eq (count $chars); and set i (math $i + 1)
                        break
                    end
                end
            case '*'
                # with -k, as if KEY came just before the command
                math $i - $multi
                return 0
        end
        set i (math $i + 1)
    end
    return 1
end

function __dlock_in_options
    test (__dlock_form) = run; and not __dlock_key_index >/dev/null
end

# True once KEY is complete: what follows is the command.
function __dlock_in_command
    set -l k (__dlock_key_index); or return 1
    test $k -le (count (commandline -opc))
end

# True right after KEY, where -c/--command may come.
function __dlock_after_key
    set -l k (__dlock_key_index); or return 1
    test $k -eq (count (commandline -opc))
end

function __dlock_complete_command
    set -l tokens (commandline -opc)
    set -l k (__dlock_key_index)
    set -l rest $tokens[(math $k + 1)..-1]
    if test (count $rest) -eq 0; and string match -q -- '-*' (commandline -ct)
        printf '%s\t%s\n' -- 'The command follows'
        return
    end
    switch "$rest[1]"
        case -c --command
            test (count $rest) -eq 1; and __fish_complete_command
            return
        case -- # skipped right after KEY, in both forms
            set -e rest[1]
    end
    complete -C "$(string join ' ' -- (string escape -- $rest) '')$(commandline -ct)"
end

# TERM, SIGTERM (any case) and 15 are all accepted: the SIG forms too once
# the token starts with S.
function __dlock_signals
    __fish_make_completion_signals
    # what dlock takes: none that stops or continues the job, no real-time one
    set -l names (string replace -r '^\d+ ' '' -- $__kill_signals |
        string match -rv '^(STOP|CONT|TSTP|TTIN|TTOU|RT.*)$')
    printf '%s\n' $names
    string match -qi 's*' -- (string replace -r '^--on-lost=' '' -- (commandline -ct))
    and printf 'SIG%s\n' $names
    printf '%s\t%s\n' ignore 'No signal; exit 75 once the command ends'
end

complete -c dlock -f -n 'not __dlock_in_command'
complete -c dlock -n '__dlock_in_command' -x -a '(__dlock_complete_command)'
complete -c dlock -n '__dlock_wants_lock; and not string match -q -- "-*" "$(commandline -ct)"' -a '(__dlock_locks)' -d 'Lock'

# The first argument may be a subcommand; one per line.
set -l first 'test (__dlock_form_index) -gt (count (commandline -opc))'
complete -c dlock -n $first -a run -d 'Lock KEY and run a command'
complete -c dlock -n $first -a status -d 'Who holds locks, or every lock'
complete -c dlock -n $first -a history -d 'The last events of a lock'
complete -c dlock -n $first -a release -d 'Release a lock by its token, or break it'
complete -c dlock -n $first -a acquire -d 'Take a lock, print its token (pipelines)'
complete -c dlock -n $first -a extend -d 'Renew the lease of an acquired lock'
complete -c dlock -n $first -a help -d 'Show help'
complete -c dlock -n $first -a version -d 'Show version'
# dlock help engines: what each engine can do
function __dlock_after_help
    test (__dlock_form) = help
    and test (__dlock_form_index) -eq (count (commandline -opc))
end
complete -c dlock -n __dlock_after_help -a engines -d 'What each engine can do'

# One option per line, in --help order, each offered to the forms that
# take it (src/cli.c's forms[] and group_of()); -c/--command only right
# after KEY.
complete -c dlock -n '__dlock_takes run' -s k -l key -r -f -a '(__dlock_locks)' -d 'A lock to take; repeat for several, all or none'
complete -c dlock -n '__dlock_takes run acquire' -s x -s e -l exclusive -d 'Exclusive lock: one holder (default)'
complete -c dlock -n '__dlock_takes run acquire' -s s -l shared -d 'Shared lock: any number of shared holders'
complete -c dlock -n '__dlock_takes run acquire' -l limit -r -f -d 'Semaphore: at most N holders at once'
complete -c dlock -n '__dlock_takes run acquire' -s n -l nonblock -l nb -l nonblocking -d 'Fail at once if the lock is held'
complete -c dlock -n '__dlock_takes run acquire' -s w -l wait -l timeout -r -f -d 'Wait at most SECONDS'
complete -c dlock -n '__dlock_takes run acquire' -s E -l conflict-exit-code -r -f -d 'Exit status when -n/-w gives up (default 1)'
complete -c dlock -n '__dlock_takes run acquire' -l fair -d 'Waiters get the lock in arrival order'
complete -c dlock -n '__dlock_takes run acquire extend' -s t -l ttl -r -f -d 'Lease TTL in seconds (default 30)'
complete -c dlock -n '__dlock_takes run' -l on-lost -r -f -a '(__dlock_signals)' -d 'Signal for the command when the lease is lost'
complete -c dlock -n '__dlock_takes run' -l kill-after -r -f -d 'SIGKILL that long after --on-lost (default 5)'
complete -c dlock -n '__dlock_takes run' -l max-hold -r -f -d 'Stop renewing after SECONDS'
complete -c dlock -n '__dlock_takes run' -l min-hold -r -f -d 'Keep the lock SECONDS after acquiring it'
complete -c dlock -n '__dlock_takes run status history release acquire extend' -s S -l server -r -f -d 'Server URL (redis://, postgres://, mysql://, zk://, etcd://...)'
complete -c dlock -n '__dlock_takes run status history release acquire extend' -l prefix -r -f -d 'Key prefix (default dlock:)'
complete -c dlock -n '__dlock_takes run status history release acquire extend' -l config -r -F -d 'Config file'
complete -c dlock -n '__dlock_takes run status history release acquire extend' -l password-file -r -F -d 'Read the servers\' password from FILE'
complete -c dlock -n '__dlock_takes run status history release acquire extend' -l tls-ca -r -F -d 'TLS: trust the CAs in FILE'
complete -c dlock -n '__dlock_takes run status history release acquire extend' -l tls-cert -r -F -d 'TLS: a client certificate (mutual TLS)'
complete -c dlock -n '__dlock_takes run status history release acquire extend' -l tls-key -r -F -d 'TLS: the client certificate\'s key'
complete -c dlock -n '__dlock_takes run status history release acquire extend' -l tls-insecure -d 'TLS: check no certificate (unsafe)'
complete -c dlock -n '__dlock_takes run status history release acquire extend' -l node-timeout -r -f -d 'Deadline for one server\'s answer'
complete -c dlock -n '__dlock_takes run acquire' -l connect-budget -r -f -d 'Keep trying servers that are down or full that long'
complete -c dlock -n '__dlock_takes run acquire' -l wait-replicas -r -f -d 'Count an acquisition once N replicas have it'
complete -c dlock -n '__dlock_takes run acquire' -l history -r -f -d 'Keep the lock'"'"'s last N events'
complete -c dlock -n '__dlock_takes run acquire' -l no-fence -d 'No DLOCK_FENCE, and no write to make one'
complete -c dlock -n '__dlock_takes run' -l unavailable -r -f -a 'fail\t"Exit 69 (default)" run\t"Run without the lock"' -d 'When no server answers'
complete -c dlock -n __dlock_after_key -s c -l command -r -f -d 'Run STRING with $SHELL -c (right after KEY)'
complete -c dlock -n '__dlock_takes run' -l fd -r -f -d 'Lock the file descriptor N is open on, then run the command'
complete -c dlock -n '__dlock_takes run' -s u -l unlock -d 'dlock -u FD: release the lock dlock FD took'
complete -c dlock -n '__dlock_takes run' -s o -l close -d 'Hold the lock until the command exits, not its whole group'
complete -c dlock -n '__dlock_takes run' -s F -l no-fork -d 'The command replaces dlock and keeps its PID'
complete -c dlock -n '__dlock_takes status history' -l json -d 'One JSON document'
complete -c dlock -n '__dlock_takes status history' -s q -l quiet -d 'Print nothing; the exit status tells'
complete -c dlock -n '__dlock_takes history' -s n -l count -r -f -d 'The last N events (default 10)'
complete -c dlock -n '__dlock_takes release extend' -l token -r -f -d 'The holder'"'"'s token'
complete -c dlock -n '__dlock_takes release' -l force -d 'Break the lock, whoever holds it'
complete -c dlock -n '__dlock_takes run acquire' -l export -d 'Print DLOCK_* lines for eval (acquire, dlock FD)'
complete -c dlock -n '__dlock_takes status' -l watch -d 'Refresh every second until Ctrl-C'
complete -c dlock -n '__dlock_takes run' -l metrics-dir -r -F -a '(__fish_complete_directories)' -d 'Write DIR/dlock_NAME.prom for node_exporter'
complete -c dlock -n '__dlock_takes run' -l notify -d 'Tell systemd: READY=1 once the lock is held, STATUS=, WATCHDOG=1'
complete -c dlock -n '__dlock_takes run' -l notify-pass -d '--notify, and the command notifies through dlock'
complete -c dlock -n '__dlock_takes run status history release acquire extend' -l log-format -r -f -a 'text\t"One line (default)" json\t"One JSON object a line"' -d 'Dlock\'s lines on stderr'
complete -c dlock -n '__dlock_takes run status history release acquire extend' -l verbose -d 'Say what dlock waits for and why it failed'
complete -c dlock -n '__dlock_takes run status history release acquire extend' -s h -l help -d 'Show help'
complete -c dlock -n '__dlock_takes run status history release acquire extend' -s V -l version -d 'Show version'
