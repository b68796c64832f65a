import { greet } from "./lib/greet";
console.log(greet("World"));
