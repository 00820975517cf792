;;; emacs-agent.el --- the agent lines of docs/editors.md (Emacs) under eglot, in batch mode -*- lexical-binding: t -*-

;; Run by emacs-agent.sh as `emacs --batch -q -l emacs-agent.el', with SIFT_E2E_ROOT (a fixture
;; whose app.py has `return {}'), `sift' first on PATH and SIFT_MODEL_* pointing at a scripted
;; endpoint. It loads snippets/emacs-sift.el, connects eglot, then runs what the page says:
;; `jsonrpc-request ... :sift/agent' answers the proposal, `eglot-execute-command ...
;; "sift.agent.apply"' puts it in the buffer through workspace/applyEdit, and the file on disk
;; stays as it was. Prints one line per check; exit status 0 only when every check passed.

(require 'cl-lib)
(require 'project)
(require 'eglot)
(require 'jsonrpc)

(defvar sift-agent-dir (file-name-directory (or load-file-name buffer-file-name)))
(defvar sift-agent-passed 0)
(defvar sift-agent-failed 0)

(defun sift-agent-check (name ok &optional detail)
  (if ok (cl-incf sift-agent-passed) (cl-incf sift-agent-failed))
  (princ (format "%s %s%s\n" (if ok "ok  " "FAIL") name (if detail (format ": %s" detail) ""))))

(defun sift-agent-wait (seconds pred)
  (let ((deadline (+ (float-time) seconds)) value)
    (while (and (not (setq value (funcall pred))) (< (float-time) deadline))
      (accept-process-output nil 0.1))
    value))

(defun sift-agent-run ()
  (let* ((root (file-name-as-directory (expand-file-name (getenv "SIFT_E2E_ROOT"))))
         (file (expand-file-name "app.py" root))
         (eglot-sync-connect 30)
         (eglot-autoreconnect nil)
         ;; Batch mode cannot answer eglot's question; the page says eglot asks by default.
         (eglot-confirm-server-initiated-edits nil)
         (project-find-functions (list (lambda (dir)
                                         (when (file-in-directory-p dir root)
                                           (cons 'transient root)))))
         server)
    (load (expand-file-name "snippets/emacs-sift.el" sift-agent-dir) nil t)
    (find-file file)
    (apply #'eglot (eglot--guess-contact))
    (setq server (sift-agent-wait 30 #'eglot-current-server))
    (sift-agent-check "eglot connected" server)
    (unless server (error "No server"))
    (sift-agent-wait 60 (lambda ()
                          (let ((ws (append (plist-get (jsonrpc-request
                                                        server :workspace/executeCommand
                                                        '(:command "sift.status" :arguments []))
                                                       :workspaces)
                                            nil)))
                            (and ws (cl-every (lambda (w) (equal (plist-get w :state) "ready")) ws)))))
    ;; What docs/editors.md says to evaluate.
    (let* ((run (jsonrpc-request (eglot-current-server) :sift/agent
                                 '(:task "make parse_config return the path") :timeout 900))
           (id (plist-get run :id)))
      (sift-agent-check "sift/agent answers a run id" (stringp id) id)
      (sift-agent-check "the diff has the change"
                        (string-match-p (regexp-quote "+    return {\"path\": path}")
                                        (or (plist-get run :diff) ""))
                        (plist-get run :diff))
      (eglot-execute-command (eglot-current-server) "sift.agent.apply" (vector (list :id id)))
      (sift-agent-check "sift.agent.apply puts the change in the buffer"
                        (sift-agent-wait 20 (lambda ()
                                              (with-current-buffer (get-file-buffer file)
                                                (string-match-p (regexp-quote "return {\"path\": path}")
                                                                (buffer-string))))))
      (sift-agent-check "the buffer is modified, the file on disk is not"
                        (and (buffer-modified-p (get-file-buffer file))
                             (with-temp-buffer
                               (insert-file-contents file)
                               (string-match-p (regexp-quote "return {}") (buffer-string))))))
    (with-current-buffer (get-file-buffer file) (set-buffer-modified-p nil))
    (eglot-shutdown server)))

(condition-case err
    (sift-agent-run)
  (error (sift-agent-check "no error" nil (error-message-string err))))
(princ (format "emacs agent: %d passed, %d failed\n" sift-agent-passed sift-agent-failed))
(kill-emacs (if (and (> sift-agent-passed 0) (= sift-agent-failed 0)) 0 1))
