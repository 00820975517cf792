;;; emacs-eglot.el --- end-to-end check of `sift lsp' under Emacs + eglot, in batch mode -*- lexical-binding: t -*-

;; Run by emacs-eglot.sh as
;;   emacs --batch -q -l emacs-eglot.el   (-q, not -Q: Debian loads elpa-eglot from site-start)
;; with these environment variables:
;;   SIFT_BIN       the sift binary, started as `SIFT_BIN lsp'
;;   SIFT_E2E_ROOT  the fixture project (app.py defines parse_config)
;;
;; It uses the configuration that docs/editors.md gives (an `eglot-server-programs' entry), opens
;; app.py, connects, waits for the index, then checks workspace/symbol, sift/search, the unsaved
;; overlay and a clean shutdown. Every wait has a timeout. It prints one line per step and ends
;; with "eglot e2e: N passed, M failed"; the exit status is 0 only when every check passed.

(require 'cl-lib)
(require 'subr-x)
(require 'project)
(require 'eglot)
(require 'jsonrpc)

(defvar sift-e2e-dir (file-name-directory (or load-file-name buffer-file-name)))
(defvar sift-e2e-passed 0)
(defvar sift-e2e-failed 0)

(defun sift-e2e-check (name ok &optional detail)
  "Record check NAME as passed when OK; print DETAIL either way."
  (if ok (cl-incf sift-e2e-passed) (cl-incf sift-e2e-failed))
  (princ (format "%s %s%s\n" (if ok "ok  " "FAIL") name
                 (if detail (format ": %s" detail) ""))))

(defun sift-e2e-wait (seconds pred)
  "Process events until PRED returns non-nil or SECONDS pass; return PRED's value."
  (let ((deadline (+ (float-time) seconds)) value)
    (while (and (not (setq value (funcall pred))) (< (float-time) deadline))
      (accept-process-output nil 0.1))
    value))

(defun sift-e2e-env (name)
  (let ((value (getenv name)))
    (when (or (null value) (string-empty-p value))
      (error "Environment variable %s is not set" name))
    value))

(defun sift-e2e-names (symbols)
  "The `name' of each SymbolInformation in SYMBOLS (a vector of plists)."
  (mapcar (lambda (s) (plist-get s :name)) (append symbols nil)))

(defun sift-e2e-run ()
  (let* ((bin (sift-e2e-env "SIFT_BIN"))
         (root (file-name-as-directory (expand-file-name (sift-e2e-env "SIFT_E2E_ROOT"))))
         (file (expand-file-name "app.py" root))
         (eglot-sync-connect 30)
         (eglot-connect-timeout 30)
         (eglot-autoreconnect nil)
         ;; The fixture is not a VCS checkout: make its folder the project.
         (project-find-functions (list (lambda (dir)
                                         (when (file-in-directory-p dir root)
                                           (cons 'transient root)))))
         server)
    ;; The configuration docs/editors.md gives, loaded as a user's init file would. It runs
    ;; plain "sift": emacs-eglot.sh puts the binary under test first on PATH.
    (load (expand-file-name "snippets/emacs-sift.el" sift-e2e-dir) nil t)
    (sift-e2e-check "sift is first in eglot-server-programs"
                    (equal (cdr (car eglot-server-programs)) '("sift" "lsp")))
    (ignore bin)
    (find-file file)
    (sift-e2e-check "python-mode" (eq major-mode 'python-mode) major-mode)
    (let ((contact (eglot--guess-contact)))
      ;; (managed-mode project class contact language-id)
      (apply #'eglot contact))
    (setq server (sift-e2e-wait 30 #'eglot-current-server))
    (sift-e2e-check "eglot connected (initialize answered)" server
                    (and server (jsonrpc-name server)))
    (unless server (error "No server"))
    (let ((caps (eglot--capabilities server)))
      (sift-e2e-check "server offers workspace/symbol"
                      (eq t (plist-get caps :workspaceSymbolProvider)))
      (sift-e2e-check "server lists sift.search"
                      (member "sift.search"
                              (append (plist-get (plist-get caps :executeCommandProvider)
                                                 :commands)
                                      nil))))
    ;; Wait for the index: sift.status says every workspace is ready.
    (let ((status
           (sift-e2e-wait
            60 (lambda ()
                 (let* ((s (jsonrpc-request server :workspace/executeCommand
                                            '(:command "sift.status" :arguments [])))
                        (ws (append (plist-get s :workspaces) nil)))
                   (and ws
                        (cl-every (lambda (w) (equal (plist-get w :state) "ready")) ws)
                        s))))))
      (sift-e2e-check "sift.status: index ready" status
                      (and status (format "%S" (plist-get status :workspaces)))))
    (let* ((symbols (jsonrpc-request server :workspace/symbol '(:query "parse_config")))
           (names (sift-e2e-names symbols)))
      (sift-e2e-check "workspace/symbol parse_config" (member "parse_config" names)
                      (format "%S" names)))
    (let* ((result (jsonrpc-request server :sift/search '(:query "parse config" :k 5)))
           (paths (mapcar (lambda (r) (plist-get r :path))
                          (append (plist-get result :results) nil))))
      (sift-e2e-check "sift/search finds app.py" (member "app.py" paths) (format "%S" paths)))
    ;; M-x xref-find-apropos: eglot's apropos backend is workspace/symbol, so sift's search.
    (let* ((xrefs (xref-backend-apropos 'eglot "parse_config"))
           (found (mapcar (lambda (x) (format "%s:%s" (xref-item-summary x)
                                              (xref-location-line (xref-item-location x))))
                          xrefs)))
      (sift-e2e-check "xref-find-apropos parse_config -> app.py line 4"
                      (cl-some (lambda (f) (string-match-p "parse_config.*:4\\'" f)) found)
                      (format "%S" found)))
    ;; The sift-search command from the docs lists hits as grep-mode lines.
    (let ((buffer (sift-search "parse_config")))
      (with-current-buffer buffer
        (sift-e2e-check "M-x sift-search lists app.py:4 parse_config"
                        (and (eq major-mode 'grep-mode)
                             (save-excursion (goto-char (point-min))
                                             (search-forward "app.py:4: parse_config" nil t)))
                        (buffer-substring-no-properties (point-min) (point-max)))))
    ;; A hit without a symbol (a Markdown window) shows its first line instead.
    (with-current-buffer (sift-search "deployment checklist")
      (sift-e2e-check "M-x sift-search shows a text hit's line"
                      (save-excursion (goto-char (point-min))
                                      (search-forward "NOTES.md:1: # Deployment checklist" nil t))
                      (buffer-substring-no-properties (point-min) (point-max))))
    (set-buffer (find-buffer-visiting file))
    ;; Unsaved edit: eglot sends didChange; sift's overlay makes it searchable at once.
    (goto-char (point-max))
    (insert "\ndef unsaved_marker_fn():\n    return 1\n")
    (eglot--signal-textDocument/didChange)
    (let ((names (sift-e2e-wait
                  10 (lambda ()
                       (let ((n (sift-e2e-names
                                 (jsonrpc-request server :workspace/symbol
                                                  '(:query "unsaved_marker_fn")))))
                         (and (member "unsaved_marker_fn" n) n))))))
      (sift-e2e-check "unsaved edit is searchable" names (format "%S" names)))
    (set-buffer-modified-p nil)
    ;; Shutdown as eglot does it (`shutdown' with null params, then `exit'), watching the exit
    ;; status ourselves: eglot-shutdown would delete the process before we could see it.
    (let ((proc (jsonrpc--process server)))
      (setf (eglot--shutdown-requested server) t)
      (let ((ok (condition-case err
                    (progn (jsonrpc-request server :shutdown nil :timeout 5) t)
                  (error (format "%S" err)))))
        (sift-e2e-check "shutdown (params null) answered" (eq ok t) ok))
      (jsonrpc-notify server :exit nil)
      (sift-e2e-wait 10 (lambda () (not (process-live-p proc))))
      (sift-e2e-check "server exited with status 0 after exit"
                      (and (not (process-live-p proc)) (eq 0 (process-exit-status proc)))
                      (format "%s %s" (process-status proc) (process-exit-status proc)))
      (ignore-errors (jsonrpc-shutdown server t)))))

(let ((ok (condition-case err
              (progn (sift-e2e-run) t)
            (error (sift-e2e-check "run" nil (error-message-string err)) nil))))
  (ignore ok)
  (princ (format "eglot e2e: %d passed, %d failed\n" sift-e2e-passed sift-e2e-failed))
  (kill-emacs (if (and (> sift-e2e-passed 0) (= sift-e2e-failed 0)) 0 1)))

;;; emacs-eglot.el ends here
