import { defineConfig } from "vite";
import react from "@vitejs/plugin-react";

// The chat is served from wherever the test (or a person) puts dist/:
// relative asset paths let it live under any prefix.
export default defineConfig({
  base: "./",
  plugins: [react()],
  build: { outDir: "dist", emptyOutDir: true, sourcemap: false, chunkSizeWarningLimit: 4096 },
  logLevel: "warn",
});
