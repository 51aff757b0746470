// Vite builds the page with its own esbuild JSX transform (no React plugin):
// `.jsx` files use the automatic runtime, so no `import React` is needed.
import { defineConfig } from "vite";

export default defineConfig({
  base: "./",
  logLevel: "warn",
  esbuild: { jsx: "automatic" },
  build: { outDir: "dist", emptyOutDir: true, sourcemap: true },
});
