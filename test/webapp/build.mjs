// Bundles src/app.jsx once per AI SDK major into dist/<major>/, with
// '@ai-sdk/react' and 'ai' aliased to that major's packages. Usage:
// node build.mjs [outdir]
import * as esbuild from 'esbuild';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const out = process.argv[2] ?? 'dist';
const html = `<!doctype html><html><head><meta charset="utf-8"><title>baton chat</title>
<style>body{font:14px system-ui;margin:2em;max-width:60em}.msg{border:1px solid #ccc;border-radius:6px;padding:.5em;margin:.5em 0}
.user{background:#eef}.reasoning{color:#777}.tool{background:#ffe;padding:.3em}#error{color:#b00}</style></head>
<body><div id="root"></div><script src="app.js"></script></body></html>`;
for (const major of [5, 6, 7]) {
  const dir = join(out, String(major));
  mkdirSync(dir, { recursive: true });
  await esbuild.build({
    entryPoints: ['src/app.jsx'],
    bundle: true,
    outfile: join(dir, 'app.js'),
    alias: { '@ai-sdk/react': `react${major}`, ai: `ai${major}` },
    jsx: 'automatic',
    define: { 'process.env.NODE_ENV': '"production"' },
    minify: true,
    logLevel: 'warning',
  });
  writeFileSync(join(dir, 'index.html'), html);
}
