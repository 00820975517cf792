-- sift's agent from Neovim 0.7+ (after one of the snippets above): :SiftAgent TASK shows the
-- proposed change as a diff; :SiftAgentApply puts it in your buffers (then :wa to write it);
-- :SiftAgentDiscard forgets it. Nothing is written to disk by sift.
local sift_agent_run = nil

-- Requests go to every client of the buffer; keep sift's answer, ignore the others'.
local function from_sift(ctx)
  local client = vim.lsp.get_client_by_id(ctx.client_id)
  return client ~= nil and client.name == 'sift'
end

vim.api.nvim_create_user_command('SiftAgent', function(opts)
  local bufnr = vim.api.nvim_get_current_buf()
  vim.notify('sift agent: working on "' .. opts.args .. '"')
  vim.lsp.buf_request(bufnr, 'sift/agent', { task = opts.args }, function(err, result, ctx)
    if not from_sift(ctx) then return end
    if err then return vim.notify('sift agent: ' .. err.message, vim.log.levels.ERROR) end
    sift_agent_run = { id = result.id, bufnr = bufnr }
    local buf = vim.api.nvim_create_buf(false, true)
    local text = result.answer .. '\n\n' .. (result.diff ~= '' and result.diff or 'no change')
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, vim.split(text, '\n'))
    vim.api.nvim_buf_set_option(buf, 'filetype', 'diff')
    vim.cmd('botright split')
    vim.api.nvim_win_set_buf(0, buf)
    vim.notify(('sift agent: %s, %d file(s): :SiftAgentApply or :SiftAgentDiscard')
      :format(result.stop, #result.files))
  end)
end, { nargs = '+' })

local function sift_agent_command(command)
  if sift_agent_run == nil then return vim.notify('sift agent: no proposed change') end
  local params = { command = command, arguments = { { id = sift_agent_run.id } } }
  vim.lsp.buf_request(sift_agent_run.bufnr, 'workspace/executeCommand', params, function(err, result, ctx)
    if not from_sift(ctx) then return end
    if err then return vim.notify('sift agent: ' .. err.message, vim.log.levels.ERROR) end
    sift_agent_run = nil
    if command == 'sift.agent.apply' then
      vim.notify(result.applied and 'sift agent: applied to the buffers; :wa writes them'
        or ('sift agent: not applied: ' .. (result.failureReason or '?')))
    end
  end)
end

vim.api.nvim_create_user_command('SiftAgentApply', function() sift_agent_command('sift.agent.apply') end, {})
vim.api.nvim_create_user_command('SiftAgentDiscard', function() sift_agent_command('sift.agent.discard') end, {})
