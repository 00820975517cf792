-- End-to-end check of `sift lsp` inside a real editor: Neovim (0.7 or later), headless.
--
-- Run by tests/tests/neovim.rs as
--   nvim --headless --clean -u NONE -c "luafile tests/nvim/e2e.lua"
-- with these environment variables:
--   SIFT_BIN       the sift binary to start as `SIFT_BIN lsp`
--   SIFT_E2E_ROOT  the workspace root to index
--   SIFT_E2E_FILE  a file under the root to open, edit (unsaved) and search for
--   SIFT_E2E_OUT   where to write the JSON report
--
-- The script never hangs: every wait has a timeout and every step runs under pcall. Whatever
-- happens, it writes the report (with an `error` field when something failed) and quits: `qa!`
-- on success, `cq` (non-zero) on failure. The Rust test judges the report.

local report = {
  progress = { kinds = {}, max_percentage = -1, messages = {}, tokens = {} },
  log_messages = {},
  steps = {},
}

-- When the last $/progress notification arrived (vim.loop.now() milliseconds).
local last_progress_ms = 0

local function step(name)
  table.insert(report.steps, name)
end

-- Everything decoded from the server is made JSON-safe (no functions, no mixed tables).
local function plain(value, depth)
  depth = depth or 0
  if depth > 20 then
    return '<too deep>'
  end
  local t = type(value)
  if value == vim.NIL or value == nil then
    return vim.NIL
  elseif t == 'table' then
    local out = {}
    for k, v in pairs(value) do
      out[type(k) == 'number' and k or tostring(k)] = plain(v, depth + 1)
    end
    return out
  elseif t == 'function' or t == 'userdata' or t == 'thread' then
    return tostring(value)
  end
  return value
end

local function write_report()
  local ok, encoded = pcall(vim.fn.json_encode, report)
  if not ok then
    local ok2, encoded2 = pcall(vim.json.encode, report)
    if ok2 then
      encoded = encoded2
    else
      encoded = vim.fn.json_encode({ error = 'cannot encode the report: ' .. tostring(encoded) })
    end
  end
  vim.fn.writefile({ encoded }, os.getenv('SIFT_E2E_OUT') or 'sift-e2e.json')
end

local function env(name)
  local value = os.getenv(name)
  if value == nil or value == '' then
    error('environment variable ' .. name .. ' is not set')
  end
  return value
end

-- A request with a timeout; returns the result or raises an error that names the method.
local function request(client, method, params, timeout_ms, bufnr)
  local response, reason = client.request_sync(method, params, timeout_ms or 10000, bufnr)
  if response == nil then
    error(method .. ' got no response: ' .. tostring(reason or 'the client has shut down'))
  end
  if response.err ~= nil then
    error(method .. ' failed: ' .. vim.inspect(response.err))
  end
  return response.result
end

local function run()
  local bin = env('SIFT_BIN')
  local root = env('SIFT_E2E_ROOT')
  local file = env('SIFT_E2E_FILE')
  env('SIFT_E2E_OUT')
  report.nvim_version = tostring(vim.version().major)
    .. '.' .. tostring(vim.version().minor)
    .. '.' .. tostring(vim.version().patch)
  report.lsp_log = vim.lsp.get_log_path()

  -- A real editing session detects file types, so didOpen says languageId = "rust".
  pcall(vim.cmd, 'filetype on')

  local capabilities = vim.lsp.protocol.make_client_capabilities()
  capabilities.window = capabilities.window or {}
  capabilities.window.workDoneProgress = true

  local exit = {}
  step('start_client')
  local client_id = vim.lsp.start_client({
    name = 'sift',
    cmd = { bin, 'lsp' },
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = 'root' } },
    capabilities = capabilities,
    handlers = {
      ['$/progress'] = function(_, result, _)
        if type(result) ~= 'table' or type(result.value) ~= 'table' then
          return
        end
        local value = result.value
        last_progress_ms = vim.loop.now()
        table.insert(report.progress.kinds, tostring(value.kind))
        report.progress.tokens[tostring(result.token)] = true
        if type(value.percentage) == 'number' and value.percentage > report.progress.max_percentage then
          report.progress.max_percentage = value.percentage
        end
        if #report.progress.messages < 50 then
          table.insert(report.progress.messages, {
            kind = tostring(value.kind),
            title = value.title,
            message = value.message,
            percentage = value.percentage,
          })
        end
      end,
      ['window/logMessage'] = function(_, result, _)
        if type(result) == 'table' and #report.log_messages < 100 then
          table.insert(report.log_messages, tostring(result.message))
        end
      end,
      ['window/showMessage'] = function(_, result, _)
        if type(result) == 'table' and #report.log_messages < 100 then
          table.insert(report.log_messages, 'showMessage: ' .. tostring(result.message))
        end
      end,
    },
    on_exit = function(code, signal, _)
      exit.code = code
      exit.signal = signal
    end,
  })
  if not client_id then
    error('vim.lsp.start_client returned nothing (is ' .. bin .. ' executable?)')
  end

  local function client()
    return vim.lsp.get_client_by_id(client_id)
  end

  step('initialize')
  local initialized = vim.wait(20000, function()
    local c = client()
    return exit.code ~= nil or (c ~= nil and c.initialized == true)
  end, 20)
  if exit.code ~= nil then
    error('the server exited during initialize with code ' .. tostring(exit.code))
  end
  if not initialized then
    error('timed out after 20 s waiting for the initialize response')
  end
  report.server_capabilities = plain(client().server_capabilities)
  report.offset_encoding = client().offset_encoding

  step('open and attach ' .. file)
  vim.cmd('edit ' .. vim.fn.fnameescape(file))
  local bufnr = vim.api.nvim_get_current_buf()
  report.filetype = vim.bo[bufnr].filetype
  report.file_uri = vim.uri_from_bufnr(bufnr)
  if not vim.lsp.buf_attach_client(bufnr, client_id) then
    error('vim.lsp.buf_attach_client failed')
  end

  step('wait for progress end')
  local ended = vim.wait(60000, function()
    return exit.code ~= nil or vim.tbl_contains(report.progress.kinds, 'end')
  end, 20)
  if exit.code ~= nil then
    error('the server exited while indexing with code ' .. tostring(exit.code))
  end
  if not ended then
    error('timed out after 60 s waiting for $/progress end')
  end
  report.kinds_at_first_end = vim.deepcopy(report.progress.kinds)

  -- Right after `end` the workspace should be ready (unless another update started).
  step('sift.status at the first end')
  report.status_at_first_end = plain(request(client(), 'workspace/executeCommand',
    { command = 'sift.status', arguments = {} }, 10000, bufnr))

  -- Nothing on disk changes from here on, so the server should go quiet: wait until no
  -- progress arrived for 2.5 s (at most 20 s). The test counts the indexing runs seen.
  step('wait for the server to go quiet')
  local quiet = vim.wait(20000, function()
    local kinds = report.progress.kinds
    return exit.code ~= nil
      or (kinds[#kinds] == 'end' and vim.loop.now() - last_progress_ms >= 2500)
  end, 50)
  report.quiet = quiet
  if exit.code ~= nil then
    error('the server exited after indexing with code ' .. tostring(exit.code))
  end

  step('workspace/symbol parse_config')
  report.symbols = plain(request(client(), 'workspace/symbol', { query = 'parse_config' }, 10000, bufnr))

  step('sift.status')
  report.status = plain(request(client(), 'workspace/executeCommand',
    { command = 'sift.status', arguments = {} }, 10000, bufnr))

  step('edit the buffer without saving')
  local last = vim.api.nvim_buf_line_count(bufnr)
  vim.api.nvim_buf_set_lines(bufnr, last, last, false, { 'fn unsaved_marker_fn() {}' })
  report.modified = vim.bo[bufnr].modified
  vim.wait(500)

  -- The overlay should answer at once; a few retries (up to 5 s) tell "slow" from "never".
  step('workspace/symbol unsaved_marker_fn')
  local deadline = vim.loop.now() + 5000
  local attempts = 0
  repeat
    attempts = attempts + 1
    report.unsaved = plain(request(client(), 'workspace/symbol', { query = 'unsaved_marker_fn' }, 10000, bufnr))
    local found = false
    for _, symbol in ipairs(type(report.unsaved) == 'table' and report.unsaved or {}) do
      if type(symbol) == 'table' and symbol.name == 'unsaved_marker_fn' then
        found = true
      end
    end
    if found then
      break
    end
    vim.wait(250)
  until vim.loop.now() > deadline
  report.unsaved_attempts = attempts

  step('sift.search unsaved_marker_fn')
  report.unsaved_search = plain(request(client(), 'workspace/executeCommand',
    { command = 'sift.search', arguments = { 'unsaved_marker_fn' } }, 10000, bufnr))

  step('shutdown')
  client().stop()
  local stopped = vim.wait(10000, function()
    return exit.code ~= nil
  end, 20)
  if not stopped then
    report.exit_timeout = true
    local c = client()
    if c then
      c.stop(true)
    end
    vim.wait(2000, function()
      return exit.code ~= nil
    end, 20)
    error('the server did not exit within 10 s of shutdown/exit')
  end
  report.exit_code = exit.code
  report.exit_signal = exit.signal
  step('done')
end

local ok, err = pcall(run)
if not ok then
  report.error = tostring(err)
  -- Do not leave the server running behind us.
  pcall(function()
    for _, c in pairs(vim.lsp.get_active_clients()) do
      c.stop(true)
    end
  end)
end
local written, werr = pcall(write_report)
if not written then
  io.stderr:write('sift e2e: cannot write the report: ' .. tostring(werr) .. '\n')
end
if ok and written then
  vim.cmd('qa!')
else
  vim.cmd('cq')
end
