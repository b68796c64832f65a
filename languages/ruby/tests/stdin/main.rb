STDIN.each_line { |line| puts "> #{line}" }
