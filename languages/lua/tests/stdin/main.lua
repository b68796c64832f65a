for line in io.lines() do print("> " .. line) end
