-- sift for Neovim 0.8-0.10 (vim.lsp.start; no plugin needed)
vim.api.nvim_create_autocmd('FileType', {
  pattern = {
    'rust', 'python', 'javascript', 'javascriptreact', 'typescript',
    'typescriptreact', 'go', 'java', 'c', 'cpp',
  },
  callback = function(args)
    local marker = vim.fs.find({ '.sift', '.git' }, {
      upward = true,
      path = vim.fs.dirname(vim.api.nvim_buf_get_name(args.buf)),
    })[1]
    vim.lsp.start({
      name = 'sift',
      cmd = { 'sift', 'lsp' },
      root_dir = marker and vim.fs.dirname(marker) or vim.fn.getcwd(),
    })
  end,
})
