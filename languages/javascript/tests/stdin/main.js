const lines = require("fs").readFileSync(0, "utf8").split("\n").filter(Boolean);
for (const l of lines) console.log("> " + l);
