io.write("Name? ")
local name = io.read("l")
print("Hello, " .. name .. "!")
