import { defineConfig } from 'vite';

// Relative asset paths: `pipelab serve --web-dir web/dist` serves the page at /.
// During `npm run dev`, /api and /readyz go to a `pipelab serve` on :7379
// (override with PIPELAB_API).
export default defineConfig({
  base: './',
  // Two pages: the playground (index.html) and `pipelab doctor --ui` (doctor.html).
  build: { target: 'es2022', chunkSizeWarningLimit: 1024, rollupOptions: { input: { main: 'index.html', doctor: 'doctor.html' } } },
  server: {
    proxy: {
      '/api': process.env.PIPELAB_API ?? 'http://127.0.0.1:7379',
      '/readyz': process.env.PIPELAB_API ?? 'http://127.0.0.1:7379',
    },
  },
});
