"""The local shell: a whole graph on a repository on disk, gates answered on the terminal or by flags."""
