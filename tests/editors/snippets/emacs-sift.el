;; sift through eglot (built into Emacs 29+; Emacs 28: the eglot package, Debian: elpa-eglot)
(with-eval-after-load 'eglot
  (add-to-list 'eglot-server-programs
               '((python-mode python-ts-mode rust-mode rust-ts-mode js-mode js-ts-mode
                  typescript-mode typescript-ts-mode tsx-ts-mode go-mode go-ts-mode
                  java-mode java-ts-mode c-mode c-ts-mode c++-mode c++-ts-mode)
                 . ("sift" "lsp"))))

(defun sift-search (query)
  "Search the current project with sift's `sift/search' and list the hits.
Needs a buffer managed by eglot with `sift lsp' (\\[eglot])."
  (interactive "sSift search: ")
  (require 'eglot)
  (require 'grep)
  (require 'subr-x)
  (let* ((server (or (eglot-current-server)
                     (user-error "No eglot server here: M-x eglot in a project file first")))
         (root (project-root (project-current)))
         (result (jsonrpc-request server :sift/search `(:query ,query :k 30))))
    (with-current-buffer (get-buffer-create "*sift*")
      (let ((inhibit-read-only t))
        (erase-buffer)
        (setq default-directory root)
        (insert (format "sift search: %s\n\n" query))
        (seq-doseq (hit (plist-get result :results))
          (insert (format "%s:%d: %s\n"
                          (plist-get hit :path)
                          (1+ (plist-get hit :matchLine))
                          (or (plist-get hit :symbol)
                              (string-trim (car (split-string (plist-get hit :snippet)
                                                              "\n")))))))
        (grep-mode))
      (display-buffer (current-buffer))
      (current-buffer))))
