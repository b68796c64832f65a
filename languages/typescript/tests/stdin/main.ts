import * as fs from "fs";
const lines: string[] = fs.readFileSync(0, "utf8").split("\n").filter((l) => l.length > 0);
for (const l of lines) console.log("> " + l);
