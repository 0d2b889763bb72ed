# fish completion for dlock(1)

# Prints the position of KEY among the tokens before the cursor (it may be
# the token being typed) and succeeds, or fails while options still come.
# Subcommand words are recognised only as the first argument.
function __dlock_key_index
    set -l tokens (commandline -opc)
    set -l i 2
    test "$tokens[2]" = run; and set i 3
    while test $i -le (count $tokens)
        set -l t $tokens[$i]
        switch $t
            case --
                math $i + 1
                return 0
            case '--*=*'
            case --limit --wait --timeout --conflict-exit-code --ttl --on-lost \
                    --kill-after --max-hold --server --prefix --config \
                    --password-file --node-timeout --wait-replicas --history \
                    --count --token --command
                set i (math $i + 1)
            case '--*'
            case '-?*'
                # Clustered short options: one that takes a value takes
                # the rest of the token or, if none, the next token.
                set -l chars (string split '' -- (string sub -s 2 -- $t))
                for j in (seq (count $chars))
                    if contains -- $chars[$j] w E t S c
                        test $j -eq (count $chars); and set i (math $i + 1)
                        break
                    end
                end
            case '*'
                echo $i
                return 0
        end
        set i (math $i + 1)
    end
    return 1
end

function __dlock_in_options
    not __dlock_key_index >/dev/null
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
    set -l names (string replace -r '^\d+ ' '' -- $__kill_signals)
    printf '%s\n' $names
    string match -qi 's*' -- (string replace -r '^--on-lost=' '' -- (commandline -ct))
    and printf 'SIG%s\n' $names
    printf '%s\t%s\n' ignore 'No signal; exit 75 once the command ends'
end

complete -c dlock -f -n 'not __dlock_in_command'
complete -c dlock -n '__dlock_in_command' -x -a '(__dlock_complete_command)'
complete -c dlock -n 'test (count (commandline -opc)) -eq 1' -a run -d 'Lock KEY and run a command'

# One option per line, in --help order; -c/--command only right after KEY.
complete -c dlock -n __dlock_in_options -s x -s e -l exclusive -d 'Exclusive lock: one holder (default)'
complete -c dlock -n __dlock_in_options -s s -l shared -d 'Shared lock: any number of shared holders'
complete -c dlock -n __dlock_in_options -l limit -r -f -d 'Semaphore: at most N holders at once'
complete -c dlock -n __dlock_in_options -s n -l nonblock -d 'Fail at once if the lock is held'
complete -c dlock -n __dlock_in_options -s w -l wait -l timeout -r -f -d 'Wait at most SECONDS'
complete -c dlock -n __dlock_in_options -s E -l conflict-exit-code -r -f -d 'Exit status when -n/-w gives up (default 1)'
complete -c dlock -n __dlock_in_options -l fair -d 'Waiters get the lock in arrival order'
complete -c dlock -n __dlock_in_options -s t -l ttl -r -f -d 'Lease TTL in seconds (default 30)'
complete -c dlock -n __dlock_in_options -l on-lost -r -f -a '(__dlock_signals)' -d 'Signal for the command when the lease is lost'
complete -c dlock -n __dlock_in_options -l kill-after -r -f -d 'SIGKILL that long after --on-lost (default 5)'
complete -c dlock -n __dlock_in_options -l max-hold -r -f -d 'Stop renewing after SECONDS'
complete -c dlock -n __dlock_in_options -s S -l server -r -f -d 'Redis server URL; repeat for RedLock'
complete -c dlock -n __dlock_in_options -l prefix -r -f -d 'Key prefix (default dlock:)'
complete -c dlock -n __dlock_in_options -l config -r -F -d 'Config file'
complete -c dlock -n __dlock_in_options -l password-file -r -F -d 'Read the Redis password from FILE'
complete -c dlock -n __dlock_in_options -l node-timeout -r -f -d 'Deadline for one server\'s answer'
complete -c dlock -n __dlock_in_options -l wait-replicas -r -f -d 'Count an acquisition once N replicas have it'
complete -c dlock -n __dlock_after_key -s c -l command -r -f -d 'Run STRING with $SHELL -c (right after KEY)'
complete -c dlock -n __dlock_in_options -l history -r -f -d 'Keep the lock'"'"'s last N events'
complete -c dlock -n __dlock_in_options -s o -l close -d 'Hold the lock until the command exits, not its whole group'
complete -c dlock -n __dlock_in_options -s F -l no-fork -d 'The command replaces dlock and keeps its PID'
complete -c dlock -n __dlock_in_options -l json -d 'status, history: one JSON document'
complete -c dlock -n __dlock_in_options -s q -l quiet -d 'status, history: print nothing'
complete -c dlock -n __dlock_in_options -l count -r -f -d 'history: the last N events'
complete -c dlock -n __dlock_in_options -l token -r -f -d 'release, extend: the holder'"'"'s token'
complete -c dlock -n __dlock_in_options -l force -d 'release: break the lock, whoever holds it'
complete -c dlock -n __dlock_in_options -l export -d 'acquire: print DLOCK_* lines for eval'
complete -c dlock -n __dlock_in_options -l verbose -d 'Say what dlock waits for and why it failed'
complete -c dlock -n __dlock_in_options -s h -l help -d 'Show help'
complete -c dlock -n __dlock_in_options -s V -l version -d 'Show version'
