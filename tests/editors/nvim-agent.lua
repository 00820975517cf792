-- Runs the agent snippet of docs/editors.md (snippets/nvim-agent.lua) in a real, headless
-- Neovim, after the 0.7 snippet, against `sift lsp` whose model is a scripted endpoint
-- (plugin-vscode/e2e/fake-openai.mjs, started by nvim-agent.sh): :SiftAgent proposes the
-- change as a diff, :SiftAgentApply puts it in the buffer, and the file on disk is unchanged.
--
-- Environment: SIFT_E2E_ROOT (the fixture, with app.py), SIFT_SNIPPETS (the snippets folder),
-- `sift` on PATH, SIFT_MODEL_* (the endpoint). Quits with :cq when a check failed.

local passed, failed = 0, 0
local function check(name, ok, detail)
  if ok then passed = passed + 1 else failed = failed + 1 end
  io.stdout:write(string.format('%s %s%s\n', ok and 'ok  ' or 'FAIL', name,
    detail and (': ' .. tostring(detail)) or ''))
end

local function sift_client(bufnr)
  for _, client in pairs(vim.lsp.buf_get_clients(bufnr)) do
    if client.name == 'sift' then return client end
  end
end

local function run()
  local root = assert(os.getenv('SIFT_E2E_ROOT'), 'SIFT_E2E_ROOT is not set')
  local snippets = assert(os.getenv('SIFT_SNIPPETS'), 'SIFT_SNIPPETS is not set')
  vim.cmd('filetype on')
  vim.cmd('cd ' .. vim.fn.fnameescape(root))
  dofile(snippets .. '/nvim-0.7.lua')
  dofile(snippets .. '/nvim-agent.lua')
  vim.cmd('edit ' .. vim.fn.fnameescape(root .. '/app.py'))
  local bufnr = vim.api.nvim_get_current_buf()
  local attached = vim.wait(20000, function()
    local c = sift_client(bufnr)
    return c ~= nil and c.initialized
  end, 50)
  check('sift attached', attached)
  if not attached then return end
  local ready = vim.wait(60000, function()
    local responses = vim.lsp.buf_request_sync(bufnr, 'workspace/executeCommand',
      { command = 'sift.status', arguments = {} }, 5000) or {}
    for _, r in pairs(responses) do
      local ws = r.result and r.result.workspaces
      if ws and #ws > 0 and ws[1].state == 'ready' then return true end
    end
    return false
  end, 200)
  check('index ready', ready)

  vim.cmd('SiftAgent make parse_config return the path')
  local diff_buf
  local proposed = vim.wait(90000, function()
    for _, b in ipairs(vim.api.nvim_list_bufs()) do
      if vim.api.nvim_buf_get_option(b, 'filetype') == 'diff' then diff_buf = b; return true end
    end
    return false
  end, 100)
  check(':SiftAgent shows the proposal', proposed)
  if not proposed then return end
  local text = table.concat(vim.api.nvim_buf_get_lines(diff_buf, 0, -1, false), '\n')
  check('the diff has the change', text:find('+    return {"path": path}', 1, true) ~= nil, text)
  check('the answer comes first', text:find('^Returned the path%.') ~= nil, text)

  vim.cmd('SiftAgentApply')
  local applied = vim.wait(20000, function()
    return vim.api.nvim_buf_get_lines(bufnr, 2, 3, false)[1] == '    return {"path": path}'
  end, 100)
  check(':SiftAgentApply puts the change in the buffer', applied,
    vim.api.nvim_buf_get_lines(bufnr, 2, 3, false)[1])
  local disk = table.concat(vim.fn.readfile(root .. '/app.py'), '\n')
  check('the file on disk is unchanged', disk:find('return {}', 1, true) ~= nil, disk)
  check('the buffer is modified, not saved', vim.api.nvim_buf_get_option(bufnr, 'modified'))
end

local ok, err = pcall(run)
if not ok then check('no error', false, err) end
io.stdout:write(string.format('nvim agent: %d passed, %d failed\n', passed, failed))
if failed > 0 then vim.cmd('cq') else vim.cmd('qa!') end
