const rl = require("readline").createInterface({ input: process.stdin });
process.stdout.write("Name? ");
rl.once("line", (name) => { console.log(`Hello, ${name}!`); rl.close(); });
