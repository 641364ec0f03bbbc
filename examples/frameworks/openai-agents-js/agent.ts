// Acme's support agent on the OpenAI Agents SDK for TypeScript, written as the SDK's
// documentation writes one. The question is its argument, the answer what it prints.
import { Agent, run, tool } from "@openai/agents";
import { z } from "zod";

const lookupOrder = tool({
  name: "lookup_order",
  description: "Look up an order's shipping status.",
  parameters: z.object({ order_id: z.string() }),
  execute: async ({ order_id }) => JSON.stringify({ order_id, status: "shipped" }),
});

const agent = new Agent({
  name: "Support",
  instructions: "You are Acme's support agent. Look an order up before you say where it is.",
  model: "gpt-4.1-mini",
  tools: [lookupOrder],
});

const result = await run(agent, process.argv[2]);
console.log(result.finalOutput);
