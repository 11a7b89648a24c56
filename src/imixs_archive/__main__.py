from imixs_archive.cli import main

raise SystemExit(main())
