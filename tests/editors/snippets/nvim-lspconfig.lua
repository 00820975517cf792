-- sift with nvim-lspconfig's older framework (Neovim 0.8-0.10 with nvim-lspconfig installed)
local lspconfig = require('lspconfig')
local configs = require('lspconfig.configs')
if not configs.sift then
  configs.sift = {
    default_config = {
      cmd = { 'sift', 'lsp' },
      filetypes = {
        'rust', 'python', 'javascript', 'javascriptreact', 'typescript',
        'typescriptreact', 'go', 'java', 'c', 'cpp',
      },
      root_dir = lspconfig.util.root_pattern('.sift', '.git'),
      settings = {},
    },
  }
end
lspconfig.sift.setup({})
