-- Neovim as a real LSP client of `venusc lsp`, attached by the recipe of editors/README.md
-- ("Neovim before 0.11"), headless:
--   nvim --headless -u NONE -c "luafile editors/test/nvim/lsp_test.lua" VENUSC FILE OUT
-- FILE holds a broken plan (E0301) that names `h100_sxm`. The test checks that the client
-- receives the diagnostics and that go-to-definition on `h100_sxm` opens the stdlib file
-- with the definition at the cursor. It writes `ok` or the failure to OUT and quits.
local venusc, file, out = vim.fn.argv(0), vim.fn.argv(1), vim.fn.argv(2)
local function finish(result)
  local f = io.open(out, 'w')
  f:write(result .. '\n')
  f:close()
  vim.cmd('qa!')
end
local ok, err = pcall(function()
  vim.cmd('edit ' .. vim.fn.fnameescape(file))
  vim.bo.filetype = 'venus'
  -- The recipe.
  local client = vim.lsp.start_client({
    name = 'venusc',
    cmd = { venusc, 'lsp' },
    root_dir = vim.fn.fnamemodify(file, ':p:h'),
  })
  assert(client, 'venusc lsp did not start')
  vim.lsp.buf_attach_client(0, client)

  -- Diagnostics of the broken plan reach the client.
  local got = vim.wait(20000, function() return #vim.diagnostic.get(0) > 0 end, 50)
  assert(got, 'no diagnostics within 20 s')
  local codes = {}
  for _, d in ipairs(vim.diagnostic.get(0)) do codes[#codes + 1] = tostring(d.code) end
  assert(vim.tbl_contains(codes, 'E0301'), 'expected E0301, got ' .. table.concat(codes, ','))

  -- Go-to-definition on `h100_sxm` opens the stdlib document.
  local lnum = vim.fn.search('h100_sxm')
  assert(lnum > 0, 'h100_sxm not in the file')
  local params = vim.lsp.util.make_position_params()
  local responses = vim.lsp.buf_request_sync(0, 'textDocument/definition', params, 20000)
  assert(responses and responses[client] and responses[client].result, 'no definition')
  local location = responses[client].result
  if vim.tbl_islist(location) then location = location[1] end
  vim.lsp.util.jump_to_location(location, 'utf-16')
  local name = vim.api.nvim_buf_get_name(0)
  assert(name:match('gpus%.venus$'), 'definition opened ' .. name)
  local line = vim.api.nvim_get_current_line()
  assert(line:match('gpu h100_sxm'), 'cursor line is: ' .. line)
  assert(#vim.api.nvim_buf_get_lines(0, 0, -1, false) > 10, 'the stdlib document is empty')
end)
finish(ok and 'ok' or ('FAILED: ' .. tostring(err)))
