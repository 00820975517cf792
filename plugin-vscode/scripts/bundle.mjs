// Bundles the extension (src/extension.ts and vscode-languageclient) into dist/extension.js, so
// the .vsix carries one file and no node_modules.
import { build } from 'esbuild';

await build({
    entryPoints: ['src/extension.ts'],
    bundle: true,
    outfile: 'dist/extension.js',
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    external: ['vscode'],
    sourcemap: true,
    minify: true,
    keepNames: true,
    logLevel: 'warning',
});
