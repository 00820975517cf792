-- sift for Neovim 0.7 (Debian 12's nvim: no vim.lsp.start yet, so start_client + attach)
local sift_client_id = nil
vim.api.nvim_create_autocmd('FileType', {
  pattern = {
    'rust', 'python', 'javascript', 'javascriptreact', 'typescript',
    'typescriptreact', 'go', 'java', 'c', 'cpp',
  },
  callback = function(args)
    if sift_client_id == nil or vim.lsp.get_client_by_id(sift_client_id) == nil then
      local root = vim.fn.getcwd()
      sift_client_id = vim.lsp.start_client({
        name = 'sift',
        cmd = { 'sift', 'lsp' },
        root_dir = root,
        workspace_folders = { { uri = vim.uri_from_fname(root), name = root } },
      })
    end
    if sift_client_id then
      vim.lsp.buf_attach_client(args.buf, sift_client_id)
    end
  end,
})
