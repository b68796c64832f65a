while {[gets stdin line] >= 0} { puts "> $line" }
