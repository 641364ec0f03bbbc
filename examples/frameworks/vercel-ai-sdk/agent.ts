// Acme's support agent on the Vercel AI SDK, written as its documentation writes one:
// `generateText` with a tool over `@ai-sdk/openai` (the Responses API). The question is its
// argument, the answer what it prints.
import { openai } from "@ai-sdk/openai";
import { generateText, stepCountIs, tool } from "ai";
import { z } from "zod";

const { text } = await generateText({
  model: openai("gpt-4.1-mini"),
  system: "You are Acme's support agent. Look an order up before you say where it is.",
  prompt: process.argv[2],
  tools: {
    lookup_order: tool({
      description: "Look up an order's shipping status.",
      inputSchema: z.object({ order_id: z.string() }),
      execute: async ({ order_id }) => ({ order_id, status: "shipped" }),
    }),
  },
  stopWhen: stepCountIs(5),
});
console.log(text);
