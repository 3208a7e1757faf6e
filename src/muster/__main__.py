from muster.cli.entry import main

main()
