-- sift for Neovim 0.11+ (built-in vim.lsp.config / vim.lsp.enable; no plugin needed)
vim.lsp.config('sift', {
  cmd = { 'sift', 'lsp' },
  filetypes = {
    'rust', 'python', 'javascript', 'javascriptreact', 'typescript',
    'typescriptreact', 'go', 'java', 'c', 'cpp',
  },
  root_markers = { '.sift', '.git' },
})
vim.lsp.enable('sift')
