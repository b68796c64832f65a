import * as readline from "readline";
const rl = readline.createInterface({ input: process.stdin });
process.stdout.write("Name? ");
rl.once("line", (name: string) => { console.log(`Hello, ${name}!`); rl.close(); });
