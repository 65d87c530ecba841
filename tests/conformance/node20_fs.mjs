// Lets the conformance suite run on Node 20: its bundle imports `globSync` from "fs" (Node >= 22), which
// only its `tier-check` command uses. On Node 20 "fs" resolves to a module that adds a stub of it.
import { register } from "node:module";

if (!("globSync" in (await import("node:fs")))) {
  const shim = `export * from "node:fs"; export { default } from "node:fs";
export function globSync() { throw new Error("fs.globSync needs Node 22 (only tier-check uses it)"); }`;
  const hooks = `export async function resolve(specifier, context, next) {
  if ((specifier === "fs" || specifier === "node:fs") && context.parentURL?.includes("/@modelcontextprotocol/conformance/")) {
    return { url: "data:text/javascript," + encodeURIComponent(${JSON.stringify(shim)}), shortCircuit: true };
  }
  return next(specifier, context);
}`;
  register("data:text/javascript," + encodeURIComponent(hooks));
}
