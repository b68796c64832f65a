return function(name) return "Hello, " .. name .. "! (from another file)" end
