-- Loads one of the Neovim snippets of docs/editors.md (snippets/nvim-*.lua) the way a user's
-- init.lua would, opens a Python file of the fixture and checks that the snippet really starts
-- sift and attaches it: the client attaches, indexes the fixture, answers workspace/symbol.
--
--   nvim --headless --clean -c "luafile nvim-snippet.lua"
-- with SIFT_SNIPPET (the snippet file), SIFT_E2E_ROOT (the fixture, with app.py) and `sift` on
-- PATH (the snippets run plain `sift`). Works on Neovim 0.7 and later (only APIs 0.7 has). Prints
-- one line per check, then "nvim e2e: N passed, M failed"; quits with :cq when a check failed.

local passed, failed = 0, 0
local function check(name, ok, detail)
  if ok then passed = passed + 1 else failed = failed + 1 end
  io.stdout:write(string.format('%s %s%s\n', ok and 'ok  ' or 'FAIL', name,
    detail and (': ' .. tostring(detail)) or ''))
end

local function sift_clients(bufnr)
  local found = {}
  local all = vim.lsp.get_clients and vim.lsp.get_clients({ bufnr = bufnr })
    or vim.lsp.buf_get_clients(bufnr)
  for _, client in pairs(all) do
    if client.name == 'sift' then table.insert(found, client) end
  end
  return found
end

-- One request to the sift client of the buffer; returns its result or raises.
local function request(bufnr, method, params)
  local responses, err = vim.lsp.buf_request_sync(bufnr, method, params, 10000)
  if not responses then error(method .. ': ' .. tostring(err)) end
  for _, response in pairs(responses) do
    if response.err then error(method .. ': ' .. vim.inspect(response.err)) end
    return response.result
  end
  error(method .. ': no response')
end

local function run()
  local root = assert(os.getenv('SIFT_E2E_ROOT'), 'SIFT_E2E_ROOT is not set')
  local snippet = assert(os.getenv('SIFT_SNIPPET'), 'SIFT_SNIPPET is not set')
  vim.cmd('filetype on')
  vim.cmd('cd ' .. vim.fn.fnameescape(root))
  dofile(snippet)
  vim.cmd('edit ' .. vim.fn.fnameescape(root .. '/app.py'))
  local bufnr = vim.api.nvim_get_current_buf()
  check('filetype python', vim.bo[bufnr].filetype == 'python', vim.bo[bufnr].filetype)

  local attached = vim.wait(20000, function()
    local clients = sift_clients(bufnr)
    return #clients > 0 and clients[1].initialized
  end, 50)
  local clients = sift_clients(bufnr)
  check('sift attached and initialized', attached and #clients == 1, #clients .. ' client(s)')
  if #clients == 0 then return end
  local client = clients[1]
  local root_dir = client.config.root_dir
  check('root_dir is the project', root_dir and vim.loop.fs_realpath(root_dir)
    == vim.loop.fs_realpath(root), root_dir)

  local status
  local ready = vim.wait(60000, function()
    local ok, result = pcall(request, bufnr, 'workspace/executeCommand',
      { command = 'sift.status', arguments = {} })
    if not ok or type(result) ~= 'table' or type(result.workspaces) ~= 'table' then return false end
    status = result
    if #result.workspaces == 0 then return false end
    for _, w in ipairs(result.workspaces) do
      if w.state ~= 'ready' then return false end
    end
    return true
  end, 200)
  check('index ready', ready, status and vim.inspect(status.workspaces, { newline = ' ', indent = '' }))

  local symbols = request(bufnr, 'workspace/symbol', { query = 'parse_config' }) or {}
  local names = {}
  for _, s in ipairs(symbols) do table.insert(names, s.name) end
  check('workspace/symbol parse_config', vim.tbl_contains(names, 'parse_config'),
    table.concat(names, ', '))

  -- A second file of another listed filetype reuses the same server.
  vim.cmd('edit ' .. vim.fn.fnameescape(root .. '/util.c'))
  local cbuf = vim.api.nvim_get_current_buf()
  vim.wait(5000, function() return #sift_clients(cbuf) > 0 end, 50)
  local cclients = sift_clients(cbuf)
  check('util.c attached to the same server', #cclients == 1 and cclients[1].id == client.id,
    #cclients .. ' client(s)')

  vim.lsp.stop_client(client.id)
  local stopped = vim.wait(10000, function()
    local c = vim.lsp.get_client_by_id(client.id)
    return c == nil or c:is_stopped()
  end, 50)
  check('server stops on request', stopped)
end

local ok, err = pcall(run)
if not ok then check('run', false, err) end
io.stdout:write(string.format('nvim e2e: %d passed, %d failed\n', passed, failed))
if ok and failed == 0 and passed > 0 then vim.cmd('qa!') else vim.cmd('cq') end
